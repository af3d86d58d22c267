import net from 'node:net';

/**
 * Ports below Linux's ephemeral range (32768-60999): the kernel hands ports of that range to
 * every outgoing connection and to every listen(0), so a port picked there and bound a moment
 * later can be taken in between (CI failed once on EADDRINUSE this way). Below it, only another
 * explicit pick competes, and a random one out of 12,000 makes that unlikely.
 */
const LOWEST = 20_000;
const BELOW_EPHEMERAL = 32_768;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port free right now, for a peer or service that must be told its port before it listens. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = LOWEST + Math.floor(Math.random() * (BELOW_EPHEMERAL - LOWEST));
    if (await bindable(port)) return port;
  }
}
