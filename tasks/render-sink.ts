// The renderer's sink proxy: it takes what routing cannot see (preconnects, WebSockets) so nothing leaves the host.
import { createServer, type Server, type Socket } from 'node:net';

/** A proxy that never proxies: it notes what tried to connect (the request line, if any) and hangs up. */
export async function startSink(onAttempt: (line: string) => void): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let noted = false;
    const note = (line: string) => {
      if (!noted) onAttempt(line);
      noted = true;
    };
    socket.once('data', (chunk) => {
      note(chunk.toString('latin1').split('\r\n')[0]!.slice(0, 300));
      socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      note('(connection without a request)');
      sockets.delete(socket);
    });
    socket.setTimeout(2000, () => socket.destroy());
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return server;
}
