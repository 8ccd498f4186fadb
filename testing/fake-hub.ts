// A Hugging Face hub of our own for the tests of `policy add --gguf hf:...`: the two routes Sweetloop and
// node-llama-cpp's downloader use (the repository's file listing, and the file itself for HEAD and GET), over a
// real HTTP server on 127.0.0.1. `sha256` is what the listing claims for the file (the hub's LFS id).
import { createServer } from 'node:http';

export interface FakeHub {
  url: string;
  /** Every request, as "METHOD /path". */
  requests: string[];
  close(): Promise<void>;
}

export async function startFakeHub(o: {
  owner: string;
  repo: string;
  file: string;
  body: Buffer;
  sha256: string;
}): Promise<FakeHub> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === `/api/models/${o.owner}/${o.repo}/tree/main`) {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify([
          { type: 'file', path: o.file, size: o.body.length, lfs: { oid: o.sha256, size: o.body.length } },
        ]),
      );
    } else if (req.url?.startsWith(`/${o.owner}/${o.repo}/resolve/main/${o.file}`)) {
      res.setHeader('content-length', String(o.body.length));
      res.setHeader('accept-ranges', 'none');
      res.end(req.method === 'HEAD' ? undefined : o.body);
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
