import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trackConnections } from '../../../src/http/connection-drain.ts';

describe('trackConnections', () => {
  let server: Server;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  // Sockets as the server sees them, to tell when it let one go.
  const served: Socket[] = [];

  async function start(): Promise<{ port: number; drain: (graceMs: number) => void }> {
    server = createServer((request, response) => {
      request.resume();
      // A reply far larger than the socket buffers hold, written at once; or work that outlasts the grace period.
      if (request.url === '/large') request.on('end', () => response.end(Buffer.alloc(64 * 1024 * 1024, 120)));
      else request.on('end', () => setTimeout(() => response.end('done'), 400));
    });
    server.on('connection', (socket) => served.push(socket));
    const connections = trackConnections(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { port: (server.address() as AddressInfo).port, drain: (graceMs) => connections.drain(graceMs) };
  }

  async function open(port: number, text: string): Promise<{ socket: Socket; received: () => string; closed: Promise<unknown> }> {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => undefined);
    let data = '';
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('utf8');
    });
    const closed = once(socket, 'close');
    await once(socket, 'connect');
    if (text !== '') socket.write(text);
    return { socket, received: () => data, closed };
  }

  it('closes idle connections at once, cuts a request still arriving at the deadline and answers one received whole', async () => {
    const { port, drain } = await start();
    const idle = await open(port, '');
    const whole = await open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    const arriving = await open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":');
    await new Promise((resolve) => setTimeout(resolve, 50));
    drain(100);
    await idle.closed;
    await arriving.closed;
    expect(arriving.received()).toBe('');
    await whole.closed;
    expect(whole.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(whole.received().toLowerCase()).toContain('connection: close');
    expect(whole.received()).toMatch(/done$/);
  });

  it('cuts off a reply the client stopped reading at the deadline, instead of waiting for it for good', async () => {
    const { port, drain } = await start();
    const reader = await open(port, 'GET /large HTTP/1.1\r\nHost: x\r\n\r\n');
    // The client reads nothing more: the reply stays stuck in the buffers.
    reader.socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const socket = served.at(-1);
    expect(socket?.destroyed).toBe(false);
    const letGo = once(socket!, 'close');
    drain(100);
    await letGo;
    expect(socket!.destroyed).toBe(true);
  });
});
