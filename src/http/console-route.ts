import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { projectPath } from '../runtime/project-dir.js';

const CONSOLE_DIR = projectPath('console');
const require = createRequire(import.meta.url);
/**
 * A file of an installed package. Their `exports` list neither the browser builds
 * nor always package.json, so the package's folder is found from its entry point.
 */
function packageFile(pkg: string, file: string): string {
  let dir = path.dirname(require.resolve(pkg));
  while (path.basename(dir) !== pkg) dir = path.dirname(dir);
  return path.join(dir, file);
}

/**
 * The browser modules the console imports (its index.html maps the bare names to
 * these URLs): served straight from node_modules, so `npm install` is the whole
 * build (docs/decisions.md, "Console").
 */
const VENDOR: Record<string, string> = {
  'preact.module.js': packageFile('preact', 'dist/preact.module.js'),
  'hooks.module.js': packageFile('preact', 'hooks/dist/hooks.module.js'),
  'htm.module.js': packageFile('htm', 'dist/htm.module.js'),
  'htm-preact.module.js': packageFile('htm', 'preact/index.module.js'),
  'uPlot.esm.js': packageFile('uplot', 'dist/uPlot.esm.js'),
  'uPlot.min.css': packageFile('uplot', 'dist/uPlot.min.css'),
};

/**
 * What a browser is told of every console file: the page runs only its own scripts
 * (and the import map inline in index.html, by its hash), talks only to this service,
 * and is never framed by another site (clickjacking: it holds a session that can
 * revoke and delete). Inline styles are allowed: the chart library sets them.
 */
function consoleHeaders(indexHtml: string): Record<string, string> {
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml)?.[1] ?? '';
  const importMapHash = createHash('sha256').update(importMap).digest('base64');
  return {
    'content-security-policy': [
      "default-src 'self'",
      `script-src 'self' 'sha256-${importMapHash}'`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** Serves the web console at /console/ (contract 8.5): static files, no server-side state; it calls only the REST interface. */
export async function registerConsoleRoute(app: FastifyInstance): Promise<void> {
  const headers = consoleHeaders(fs.readFileSync(path.join(CONSOLE_DIR, 'index.html'), 'utf8'));
  await app.register(fastifyStatic, {
    root: CONSOLE_DIR,
    prefix: '/console/',
    index: 'index.html',
    decorateReply: true,
    setHeaders: (res) => {
      for (const [name, value] of Object.entries(headers)) void res.header(name, value);
    },
  });
  // Relative, so a redirect holds behind a proxy's path prefix. The service's own address,
  // typed into a browser, opens the console rather than a 404.
  for (const url of ['/', '/console']) app.get(url, (_request, reply) => reply.redirect('console/'));
  for (const [name, file] of Object.entries(VENDOR)) {
    app.get(`/console/vendor/${name}`, (_request, reply) => reply.sendFile(path.basename(file), path.dirname(file)));
  }
}
