import { Aws, SecretValue, Validations, type RemovalPolicy } from "aws-cdk-lib";
import { PolicyStatement, type IGrantable } from "aws-cdk-lib/aws-iam";
import { Secret, type ISecret } from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";
import { CREDENTIAL_SECRETS, secretTemplate, type CredentialSecretName } from "../../lib/config/credentials.js";

export interface CredentialsSecretsProps {
  stage: string;
  /** The secrets the stage's functions read. */
  names: readonly CredentialSecretName[];
  /** Existing secrets by name (`secretArns`); the others are created. */
  imported: Partial<Record<CredentialSecretName, string>>;
  /** The customer-managed key of the imported secrets; their readers get `kms:Decrypt` through Secrets Manager. */
  kmsKeyArn?: string;
  removalPolicy: RemovalPolicy;
}

/** A complete ARN ends in the six-character suffix Secrets Manager adds; a partial one does not. */
const COMPLETE_SECRET_ARN = /-[A-Za-z0-9]{6}$/;

const pascal = (name: string) => `${name[0].toUpperCase()}${name.slice(1)}`;

/**
 * The credentials secrets of a stage (docs/deploying.md, "The credentials secrets"). A secret the stack
 * creates holds its JSON template, every key empty, so a first deploy works and each function says
 * which keys it still lacks; CloudFormation writes the template only at creation (it is never
 * changed, so a deploy never overwrites the values filled in since).
 */
export class CredentialsSecrets extends Construct {
  readonly secrets: Partial<Record<CredentialSecretName, ISecret>> = {};
  /** The secrets this stack created, which the user fills in. */
  readonly created: Partial<Record<CredentialSecretName, Secret>> = {};
  private readonly kmsKeyArn?: string;

  constructor(scope: Construct, id: string, props: CredentialsSecretsProps) {
    super(scope, id);
    this.kmsKeyArn = props.kmsKeyArn;
    for (const name of props.names) {
      const arn = props.imported[name];
      if (arn) {
        this.secrets[name] = Secret.fromSecretAttributes(
          this,
          pascal(name),
          COMPLETE_SECRET_ARN.test(arn) ? { secretCompleteArn: arn } : { secretPartialArn: arn },
        );
        continue;
      }
      const secret = new Secret(this, pascal(name), {
        secretName: `${props.stage}/threadwise/${CREDENTIAL_SECRETS[name].name}`,
        description: `Threadwise ${props.stage} credentials: ${CREDENTIAL_SECRETS[name].keys.join(", ")} (fill in; see docs/deploying.md)`,
        // Empty strings only, so nothing secret is in the template.
        secretObjectValue: Object.fromEntries(Object.entries(secretTemplate(name)).map(([key, value]) => [key, SecretValue.unsafePlainText(value)])),
        removalPolicy: props.removalPolicy,
      });
      Validations.of(secret).acknowledge({
        id: "AwsSolutions-SMG4",
        reason:
          "The values (MongoDB Atlas user, Slack signing secret and bot token, Teams app password, Power BI client " +
          "secret) are issued by those services, which Secrets Manager cannot rotate without a custom rotation " +
          "function per service; they are rotated at the source and written with put-secret-value.",
      });
      this.secrets[name] = secret;
      this.created[name] = secret;
    }
  }

  /**
   * Lets `grantee` read the named secrets (those that exist: Power BI's only with its tool) and
   * returns them. For an imported secret under a customer-managed key, also `kms:Decrypt` on that
   * key through Secrets Manager only: CDK's own grant cannot add it, since it cannot change an
   * imported key's policy and says nothing.
   */
  grantRead(grantee: IGrantable, names: readonly CredentialSecretName[]): Partial<Record<CredentialSecretName, ISecret>> {
    const picked = Object.fromEntries(names.flatMap((name) => (this.secrets[name] ? [[name, this.secrets[name]]] : []))) as Partial<
      Record<CredentialSecretName, ISecret>
    >;
    for (const secret of Object.values(picked)) secret.grantRead(grantee);
    const readsImported = Object.keys(picked).some((name) => !(name in this.created));
    if (this.kmsKeyArn && readsImported) {
      grantee.grantPrincipal.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ["kms:Decrypt"],
          resources: [this.kmsKeyArn],
          conditions: { StringEquals: { "kms:ViaService": `secretsmanager.${Aws.REGION}.amazonaws.com` } },
        }),
      );
    }
    return picked;
  }
}
