// Asks the kernel for free TCP ports on the loopback interface, so parallel stacks never collide.
import { createServer, type Server } from 'node:net';

/** `count` distinct free ports: all are held open together before any is released, so none repeats. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let index = 0; index < count; index++) {
      const server = createServer();
      servers.push(server);
      ports.push(await listen(server, host));
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (typeof address === 'object' && address !== null) resolve(address.port);
      else reject(new Error('the kernel returned no port'));
    });
  });
}
