import { type CfnResource, type CustomResourceProviderBase, Fn, type RemovalPolicy, Stack } from "aws-cdk-lib";
import {
  FlowLogDestination,
  FlowLogTrafficType,
  type InterfaceVpcEndpoint,
  InterfaceVpcEndpointService,
  Port,
  SecurityGroup,
  SubnetType,
  Vpc,
  type CfnEIP,
} from "aws-cdk-lib/aws-ec2";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { StageVpcConfig } from "../stage-config.js";

/** Atlas's private endpoints map each cluster node to a port in this range. */
export const ATLAS_PRIVATE_ENDPOINT_PORTS = Port.tcpRange(1024, 65535);

export interface FunctionNetworkProps extends StageVpcConfig {
  stage: string;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
}

/**
 * `vpc=nat`: a VPC whose private subnets hold the functions, their traffic to the internet (AWS
 * APIs, Slack, Microsoft, Atlas) leaving through NAT gateways with fixed Elastic IPs, which Atlas's
 * IP access list can name instead of 0.0.0.0/0. With Atlas's endpoint service name, an interface
 * endpoint (AWS PrivateLink) takes MongoDB traffic off the internet altogether.
 */
export class FunctionNetwork extends Construct {
  readonly vpc: Vpc;
  readonly securityGroup: SecurityGroup;
  /** The NAT gateways' public addresses, comma-separated: what Atlas's IP access list admits. */
  readonly natPublicIps: string;
  readonly atlasEndpoint?: InterfaceVpcEndpoint;

  constructor(scope: Construct, id: string, props: FunctionNetworkProps) {
    super(scope, id);
    const flowLogs = new LogGroup(this, "FlowLogs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.vpc = new Vpc(this, "Vpc", {
      vpcName: `${props.stage}-threadwise`,
      maxAzs: 2,
      natGateways: props.natGateways,
      subnetConfiguration: [
        { name: "public", subnetType: SubnetType.PUBLIC, cidrMask: 24 },
        { name: "functions", subnetType: SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
      ],
      flowLogs: { all: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs), trafficType: FlowLogTrafficType.ALL } },
    });
    this.ownDefaultSecurityGroupRestriction(props);
    this.securityGroup = new SecurityGroup(this, "Functions", {
      vpc: this.vpc,
      description: `${props.stage}-threadwise functions: no inbound; outbound to AWS APIs, channels and MongoDB`,
      allowAllOutbound: true,
    });
    const eips = this.vpc.publicSubnets.flatMap((subnet) => {
      const eip = subnet.node.tryFindChild("EIP") as CfnEIP | undefined;
      return eip ? [eip.ref] : [];
    });
    this.natPublicIps = Fn.join(",", eips);

    if (props.atlasPrivateEndpointServiceName) {
      const endpointGroup = new SecurityGroup(this, "AtlasEndpoint", {
        vpc: this.vpc,
        description: `${props.stage}-threadwise Atlas private endpoint: MongoDB from the functions only`,
        allowAllOutbound: false,
      });
      endpointGroup.addIngressRule(this.securityGroup, ATLAS_PRIVATE_ENDPOINT_PORTS, "MongoDB through Atlas's private endpoint, from the functions");
      this.atlasEndpoint = this.vpc.addInterfaceEndpoint("Atlas", {
        service: new InterfaceVpcEndpointService(props.atlasPrivateEndpointServiceName),
        subnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
        securityGroups: [endpointGroup],
        // Atlas serves its own private-endpoint host names; the endpoint's private DNS is not used.
        privateDnsEnabled: false,
        open: false,
      });
    }
  }

  /**
   * The function CDK adds to empty the VPC's default security group (cdk.json's
   * `restrictDefaultSecurityGroup` flag) comes with AWS's basic execution policy, whose log grant
   * covers every log group, and logs where nothing expires: it gets a log group of the stage's
   * retention instead, and may write there only, as the stack's own functions.
   */
  private ownDefaultSecurityGroupRestriction(props: FunctionNetworkProps): void {
    const provider = Stack.of(this).node.tryFindChild("Custom::VpcRestrictDefaultSGCustomResourceProvider") as CustomResourceProviderBase | undefined;
    if (!provider) return;
    const logs = new LogGroup(this, "DefaultSecurityGroupRestrictionLogs", { retention: props.logRetention, removalPolicy: props.removalPolicy });
    (provider.node.findChild("Handler") as CfnResource).addPropertyOverride("LoggingConfig.LogGroup", logs.logGroupName);
    (provider.node.findChild("Role") as CfnResource).addPropertyDeletionOverride("ManagedPolicyArns");
    provider.addToRolePolicy({ Effect: "Allow", Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: logs.logGroupArn });
  }
}
