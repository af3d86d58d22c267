import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The conformance runner's server scenarios (@modelcontextprotocol/conformance, a
 * devDependency), each revision's `--requirements` list, direct vs through a gateway
 * (test/conformance/compare.ts, run in a network namespace of its own): our v2-SDK
 * fixture (test/conformance/fixture-server.ts) at 2025-11-25 and at 2026-07-28, and
 * server-everything at 2025-11-25. CONFORMANCE_JS may name another runner build.
 */
const conformanceJs = process.env.CONFORMANCE_JS ?? path.resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
const available = fs.existsSync(conformanceJs);
if (!available) console.error(`gateway-conformance: skipped, the conformance runner is not installed (npm install, or set CONFORMANCE_JS)`);

type Results = Record<string, Record<string, string>>;
type Comparison = { revision: string; upstream: string; direct: Results; gateway: Results };

/**
 * Scenarios whose checks differ through the gateway, per comparison, with the reason
 * (docs/gateway.md, Conformance). The gateway runs in when-needed naming mode, so the
 * runner's calls of the upstream's tools by their own names pass unchanged.
 */
const KNOWN_DIFFERENCES: Record<string, Record<string, string>> = {
  'fixture 2025-11-25': {
    'server-sse-multiple-streams': 'the gateway answers tools/list with JSON where the fixture streams it (INFO instead of SUCCESS; streaming is optional)',
    'server-sse-polling': 'the gateway resumes the upstream stream itself and answers the host with JSON: there is no cut stream for the host to resume',
  },
  'fixture 2026-07-28': {},
  'server-everything 2025-11-25': {
    'dns-rebinding-protection': 'the gateway refuses a foreign Origin (403); server-everything does not',
    'server-session-lifecycle': 'the gateway answers 404 for a session ended with DELETE; server-everything does not',
    'server-sse-multiple-streams': 'the gateway answers tools/list with JSON where server-everything streams it (INFO instead of SUCCESS)',
    'server-sse-polling': 'the gateway answers with JSON: there is no cut stream for the host to resume',
  },
};

const failed = (outcome: Record<string, string>): boolean => Object.values(outcome).includes('FAILURE');

// The comparison is about the protocol, not the store: it runs once, in the PGlite project (vitest.config.ts).
describe.skipIf(!available)('conformance: gateway vs direct', () => {
  let comparisons: Record<string, Comparison> = {};
  let admin: Record<string, Results> = {};
  beforeAll(async () => {
    const root = path.resolve(import.meta.dirname, '..');
    const script = `ip link set lo up && cd ${JSON.stringify(root)} && exec ${JSON.stringify(process.execPath)} --import tsx test/conformance/compare.ts`;
    const { stdout } = await promisify(execFile)('unshare', ['-n', 'bash', '-c', script], {
      env: { ...process.env, CONFORMANCE_JS: conformanceJs },
      timeout: 240_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    ({ comparisons, admin } = JSON.parse(stdout.trim().split('\n').pop()!) as { comparisons: Record<string, Comparison>; admin: Record<string, Results> });
  }, 250_000);

  it('runs every comparison', () => {
    expect(Object.keys(comparisons).sort()).toEqual(Object.keys(KNOWN_DIFFERENCES).sort());
  });

  it('the fixture passes every scenario of both revisions directly, the tasks extension included', () => {
    for (const name of ['fixture 2025-11-25', 'fixture 2026-07-28']) {
      const { direct } = comparisons[name]!;
      expect(Object.keys(direct).length, name).toBeGreaterThan(30);
      expect(
        Object.keys(direct).filter((s) => failed(direct[s]!)),
        name,
      ).toEqual([]);
    }
    // The tasks scenarios ran with their checks (tasks-status-notifications is a runner placeholder, SKIPPED).
    const tasks = Object.entries(comparisons['fixture 2026-07-28']!.direct).filter(([s]) => s.startsWith('tasks-'));
    expect(tasks.length).toBe(10);
    expect(tasks.filter(([, checks]) => Object.values(checks).includes('SUCCESS')).length).toBe(9);
  });

  it.each(Object.keys(KNOWN_DIFFERENCES))('%s: every scenario gives the same checks through the gateway as direct, except the recorded differences', (name) => {
    const { direct, gateway } = comparisons[name]!;
    expect(Object.keys(gateway).sort()).toEqual(Object.keys(direct).sort());
    const differing = Object.keys(direct).filter((s) => !isDeepStrictEqual(direct[s], gateway[s]));
    // Which checks moved, for the scenarios nobody recorded: what a failure has to explain.
    const unexplained = differing
      .filter((s) => !(s in KNOWN_DIFFERENCES[name]!))
      .map((s) => {
        const [d, g] = [direct[s]!, gateway[s]!];
        const moved = Object.keys({ ...d, ...g }).filter((id) => d[id] !== g[id]);
        return `${s}: ${moved.map((id) => `${id} ${d[id] ?? '-'} -> ${g[id] ?? '-'}`).join(', ')}`;
      });
    expect(differing.sort(), unexplained.join('; ')).toEqual(Object.keys(KNOWN_DIFFERENCES[name]!).sort());
  });

  // The admin endpoint serves tools only (no prompts, resources, logging or the fixture's test_* tools), so most
  // scenarios fail there by design; these are the checks that concern any server of the revision.
  it.each([
    ['2025-11-25', ['server-initialize', 'ping', 'tools-list']],
    ['2026-07-28', ['tools-list', 'http-header-validation', 'input-required-result-unsupported-methods']],
  ])("the admin MCP endpoint passes the runner's transport and lifecycle scenarios of %s", (revision, scenarios) => {
    const results = admin[revision]!;
    for (const s of scenarios) expect(failed(results[s] ?? { missing: 'FAILURE' }), `${revision} ${s}: ${JSON.stringify(results[s])}`).toBe(false);
  });

  it('the admin MCP endpoint passes the 2026-07-28 stateless checks that need no fixture tool: envelope, discovery, versions, header mismatch, removed methods (404, -32601), listen', () => {
    const stateless = admin['2026-07-28']!['server-stateless'] ?? {};
    const needFixture = [
      'sep-2575-server-rejects-undeclared-capability',
      'sep-2575-missing-capability-http-400',
      'sep-2575-http-server-no-independent-requests-on-stream',
      'sep-2575-server-no-log-without-loglevel',
    ];
    const failing = Object.entries(stateless).filter(([id, status]) => status === 'FAILURE' && !needFixture.includes(id));
    expect(Object.keys(stateless).length).toBeGreaterThan(20);
    expect(failing).toEqual([]);
    expect(stateless['sep-2575-http-server-method-not-found-404-initialize']).toBe('SUCCESS');
  });
});
