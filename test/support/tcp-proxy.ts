import { readFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { Transform } from "node:stream";
import { createServer as createTlsServer } from "node:tls";

/** A self-signed certificate for 127.0.0.1 and localhost, valid until 2126: a test fixture, trusted by nothing else. */
export const LOOPBACK_TLS = {
  certFile: new URL("./tls/loopback-test-only.crt", import.meta.url).pathname,
  keyFile: new URL("./tls/loopback-test-only.key", import.meta.url).pathname,
};

/**
 * A loopback TCP proxy that a test can cut and restore, to stage an outage of the server behind it,
 * or whose open connections it can drop without a word, as a NAT gateway forgets an idle connection.
 */
export interface TcpProxy {
  port: number;
  /** Connections accepted since the proxy started. */
  readonly accepted: number;
  /** Connections open now. */
  readonly open: number;
  /** Closes every connection and stops listening: clients see resets and refusals. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /**
   * Every open connection goes silent: nothing more is forwarded either way and nothing is closed,
   * so the client learns of it only by a timeout. New connections are forwarded as before.
   */
  dropSilently(): void;
  /**
   * Holds the next client write that `match`es (a MongoDB command, found by its bytes), so the
   * server never sees it, and resolves: a test kills the client at that exact point of its work.
   * The connection stays open and silent.
   */
  intercept(match: (chunk: Buffer) => boolean): Promise<void>;
  close(): Promise<void>;
}

/** The bytes of a BSON string field `name: value`, to find a command in a MongoDB wire message. */
export function bsonString(name: string, value: string): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32LE(Buffer.byteLength(value) + 1);
  return Buffer.concat([Buffer.from([0x02]), Buffer.from(`${name}\0`), length, Buffer.from(`${value}\0`)]);
}

export interface TcpProxyOptions {
  /** Terminate TLS with {@link LOOPBACK_TLS} and forward plain TCP, as a TLS-only database would be reached. */
  tls?: boolean;
}

export async function startTcpProxy(targetPort: number, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let server: Server;
  let port = 0;
  let listening = false;
  let accepted = 0;
  const interceptors = new Set<{ match: (chunk: Buffer) => boolean; resolve(): void }>();

  const forward = (client: Socket) => {
    accepted += 1;
    const upstream = connect(targetPort, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    for (const s of [client, upstream]) {
      s.on("close", () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
      s.on("error", () => s.destroy());
    }
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        const interceptor = [...interceptors].find((i) => i.match(chunk));
        if (!interceptor) return done(null, chunk);
        interceptors.delete(interceptor);
        interceptor.resolve();
        done();
      },
    });
    client.pipe(tap).pipe(upstream).pipe(client);
  };

  const listen = () =>
    new Promise<void>((resolve) => {
      if (listening) return resolve();
      listening = true;
      server = options.tls
        ? createTlsServer({ cert: readFileSync(LOOPBACK_TLS.certFile), key: readFileSync(LOOPBACK_TLS.keyFile) }, forward)
        : createServer(forward);
      server.listen(port, "127.0.0.1", () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close(() => resolve());
    });

  await listen();
  return {
    get port() {
      return port;
    },
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    cut: stop,
    restore: listen,
    dropSilently() {
      for (const { client, upstream } of pairs) {
        client.unpipe();
        upstream.unpipe();
        // Read and discard, so neither side's writes ever fail or block, and a close still arrives.
        for (const s of [client, upstream]) {
          s.removeAllListeners("data");
          s.on("data", () => undefined);
          s.resume();
        }
      }
    },
    intercept(match) {
      return new Promise((resolve) => interceptors.add({ match, resolve }));
    },
    close: stop,
  };
}
