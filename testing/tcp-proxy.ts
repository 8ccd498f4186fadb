// A TCP proxy in front of Postgres for tests that take the database away: `down()` cuts every connection and
// refuses new ones (the database "goes away"), `up()` listens again on the same port.
import { createServer, connect, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private server: Server | null = null;
  private sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly targetPort: number) {}

  async up(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** The database "goes away": every connection is cut and new ones are refused. */
  async down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
    this.server = null;
  }

  /** A postgres:// URL like `url` that goes through this proxy. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.port = String(this.port);
    return u.toString();
  }
}
