/**
 * The floor for bench:gateway: a bare node:http reverse proxy in its own process, in
 * front of the same upstream. It parses nothing, checks nothing and logs nothing:
 * each request is streamed to the upstream on a keep-alive connection and the answer
 * streamed back. What it costs is what any proxy hop written on Node's HTTP stack
 * costs on this machine, before any MCP work.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.env.BENCH_UPSTREAM_URL!);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

const server = http.createServer((request, response) => {
  const forward = http.request(
    { host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers: { ...request.headers, host: upstream.host }, agent },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    },
  );
  forward.on('error', () => response.headersSent || response.writeHead(502).end());
  request.pipe(forward);
});

server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
