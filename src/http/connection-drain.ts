// Shutdown for HTTP connections: Node's server.close() waits for every connection, and counts one that never sent a
// request (a browser's preconnect) or sent half of one as busy for up to its 60 s headers timeout, holding the stop up.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long a request still arriving at shutdown (its body sent slowly) gets before its connection is closed anyway. */
export const DRAIN_GRACE_MS = 5_000;

/** Node's ServerResponse of the request in progress on a socket (set from its headers until its reply is sent). */
type ServingSocket = Socket & {
  _httpMessage?: {
    headersSent: boolean;
    writableEnded: boolean;
    setHeader(name: string, value: string): void;
    req?: { complete: boolean };
  } | null;
};

export interface ConnectionDrain {
  /**
   * Closes connections with no request in progress at once and lets the others finish their request and close (with
   * `Connection: close`). After `graceMs`, a request still arriving, or a reply the client is not reading, is cut off;
   * a request received whole and still being worked on is answered (the shutdown's own bound covers it), since its
   * work, and the executions it records, are under way.
   */
  drain(graceMs?: number): void;
}

/**
 * A request received whole whose reply is not written yet: its work is under way. A reply already written but not
 * flushed (a client that stopped reading) is not, nor is a request still arriving.
 */
function workInProgress(socket: ServingSocket): boolean {
  const response = socket._httpMessage;
  return response?.req?.complete === true && !response.writableEnded;
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
        for (const socket of sockets) if (!workInProgress(socket)) socket.destroy();
      }, graceMs).unref();
    },
  };
}
