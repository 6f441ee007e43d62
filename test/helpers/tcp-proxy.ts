// A TCP proxy in front of a real server (Redis, PostgreSQL) that can slow its replies down or lose one, to test what a
// network does to a client.
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** The target's URL with the proxy's host and port in it. */
  readonly url: string;
  /** Holds every reply back this long from now on (0: passes them at once), in order. */
  delayReplies(ms: number): void;
  /** Closes both connections instead of passing the next reply on, as a network losing it would. */
  dropNextReply(): void;
  close(): void;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  let drop = false;
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const server = connect(Number(target.port || defaultPort(target.protocol)), target.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    // Replies leave in arrival order: each waits for the one before it as well as for the delay.
    let previous = Promise.resolve();
    client.on('data', (data) => server.write(data));
    server.on('data', (data) => {
      if (drop) {
        drop = false;
        client.destroy();
        server.destroy();
        return;
      }
      const due = Date.now() + delayMs;
      previous = previous.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!client.destroyed) client.write(data);
      });
    });
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const { port } = proxy.address() as AddressInfo;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    delayReplies: (ms) => {
      delayMs = ms;
    },
    dropNextReply: () => {
      drop = true;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    },
  };
}

function defaultPort(protocol: string): number {
  return protocol === 'redis:' ? 6379 : 5432;
}
