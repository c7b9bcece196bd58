import { Validations } from "aws-cdk-lib";
import { SlackChannelConfiguration } from "aws-cdk-lib/aws-chatbot";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription, UrlSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { Construct } from "constructs";

/** Who hears the stage's alarms (context keys `alarmTopicArn`, `alarmEmails`, `alarmUrls`, `alarmSlackChannel`). */
export interface AlarmDestinations {
  /** An existing topic (an on-call team's): used instead of one the stack creates. */
  topicArn?: string;
  /** Addresses subscribed by email (each confirms the subscription once). */
  emails: string[];
  /** HTTPS endpoints subscribed to the topic: a PagerDuty or Opsgenie CloudWatch integration URL. */
  urls: string[];
  /** A Slack channel through AWS Chatbot: the workspace id (already authorized in the Chatbot console) and the channel id. */
  slack?: { workspaceId: string; channelId: string };
}

export interface AlarmTopicProps extends AlarmDestinations {
  stage: string;
}

/**
 * The topic every alarm notifies, on ALARM and on OK: the given one, or one the stack creates
 * (`<stage>-threadwise-alarms`, TLS only) with the subscriptions context names. Messages carry
 * alarm names, states and numbers, never user data.
 */
export class AlarmTopic extends Construct {
  readonly topic: ITopic;

  constructor(scope: Construct, id: string, props: AlarmTopicProps) {
    super(scope, id);
    if (props.topicArn) {
      this.topic = Topic.fromTopicArn(this, "Imported", props.topicArn);
      return;
    }
    const topic = new Topic(this, "Topic", { topicName: `${props.stage}-threadwise-alarms`, enforceSSL: true });
    Validations.of(topic).acknowledge({
      id: "AwsSolutions-SNS2",
      reason:
        "CloudWatch alarms cannot publish to a topic encrypted with the AWS managed SNS key, and the messages are alarm " +
        "names, states and metric values only (no user data): in transit they are TLS-only (enforceSSL).",
    });
    for (const email of props.emails) topic.addSubscription(new EmailSubscription(email));
    for (const url of props.urls) topic.addSubscription(new UrlSubscription(url));
    if (props.slack) {
      new SlackChannelConfiguration(this, "Slack", {
        slackChannelConfigurationName: `${props.stage}-threadwise-alarms`,
        slackWorkspaceId: props.slack.workspaceId,
        slackChannelId: props.slack.channelId,
        notificationTopics: [topic],
      });
    }
    this.topic = topic;
  }
}
