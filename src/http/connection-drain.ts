// Shutdown for HTTP connections: Node's server.close() waits for every connection, and counts one that never sent a
// request (a browser's preconnect) or sent half of one as busy for up to its 60 s headers timeout, holding the stop up.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long requests in flight at shutdown get to finish before their connections are closed anyway. */
export const DRAIN_GRACE_MS = 5_000;

/** Node's ServerResponse of the request in progress on a socket (set from its headers until its reply is sent). */
type ServingSocket = Socket & { _httpMessage?: { headersSent: boolean; setHeader(name: string, value: string): void } | null };

export interface ConnectionDrain {
  /**
   * Closes connections with no request in progress at once, lets the others finish their request and close (with
   * `Connection: close`), and closes whatever is still open after `graceMs`.
   */
  drain(graceMs?: number): void;
}

export function trackConnections(server: Server): ConnectionDrain {
  const sockets = new Set<ServingSocket>();
  server.on('connection', (socket: ServingSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    drain(graceMs = DRAIN_GRACE_MS) {
      for (const socket of sockets) {
        const response = socket._httpMessage;
        if (response === undefined || response === null) socket.destroy();
        else if (!response.headersSent) response.setHeader('connection', 'close');
      }
      setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs).unref();
    },
  };
}
