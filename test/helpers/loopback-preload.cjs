// Loaded with `node -r` into peers that listen on all interfaces and have no host
// setting (server-everything): every TCP listen is forced onto 127.0.0.1.
/* global require */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS preload for `node -r`
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first && typeof first === 'object') {
    args[0] = { ...first, host: '127.0.0.1' };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] === 'string') args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
