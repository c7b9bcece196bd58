import type { App } from "../../lib/app.js";
import { ChannelRoles } from "../../lib/auth/index.js";
import { ChannelEventDeduper, createChannelReplier, createGroupDirectories } from "../../lib/channels/index.js";
import { channelCredentialsOf, type Credentials } from "../../lib/config/credentials.js";
import { TurnJobWorker, type TurnMetricsSink } from "../../lib/queue/index.js";
import { config } from "./runtime.js";

/** The repliers hold tokens and token caches: made once per app and secret version, not per turn. */
const workers = new WeakMap<App, { key: string; worker: TurnJobWorker }>();

export function workerFor(app: App, credentials: Credentials, onTurnCompleted: TurnMetricsSink): TurnJobWorker {
  const key = JSON.stringify(credentials);
  const cached = workers.get(app);
  if (cached?.key === key) return cached.worker;
  const worker = new TurnJobWorker({
    runner: app.runner,
    conversations: app.database.conversations,
    turns: app.database.turns,
    replier: createChannelReplier(channelCredentialsOf(credentials), config.channels),
    roles: new ChannelRoles(config.auth.channelRoles, createGroupDirectories(channelCredentialsOf(credentials), config.channels)),
    maxReceives: config.deployment.turnMaxReceives,
    maxMessageChars: config.maxMessageChars,
    onTurnCompleted,
  });
  workers.set(app, { key, worker });
  return worker;
}

const dedupers = new WeakMap<App, Promise<ChannelEventDeduper>>();

/** The channel event deduper of this app's database, its TTL index made once. */
export function deduperFor(app: App): Promise<ChannelEventDeduper> {
  let deduper = dedupers.get(app);
  if (!deduper) {
    const made = new ChannelEventDeduper(app.database.db);
    deduper = made.setup().then(() => made);
    deduper.catch(() => dedupers.delete(app));
    dedupers.set(app, deduper);
  }
  return deduper;
}
