import { randomBytes } from 'node:crypto';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  ProtocolError,
  type Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * The tasks extension of revision 2026-07-28 (SEP-2663) for test servers written with
 * the v2 SDK, which has no server side for it: a task store in memory, the extension's
 * methods (tasks/get, tasks/update, tasks/cancel) on a low-level `Server`, and the tools
 * the conformance runner's `tasks-*` scenarios call by name. Shared by the tasks
 * upstream of test/gateway-tasks.test.ts (test/helpers/tasks-upstream.ts) and the
 * conformance fixture's 2026-07-28 side (test/conformance/fixture-tasks.ts).
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
type Result = Record<string, unknown>;

interface Task {
  taskId: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  result?: Result;
  error?: { code: number; message: string };
  inputRequests?: Record<string, unknown>;
  /** The answers gathered so far for the pending inputRequests, and what the work does once all are in. */
  answers?: Record<string, unknown>;
  onAnswers?: (answers: Record<string, unknown>) => void;
  timer?: NodeJS.Timeout;
}

/** What a task's work can do with its task. */
export interface TaskRun {
  /** Runs `then` after `ms`, unless the task ended first (cancelled). */
  after(ms: number, then: () => void): void;
  complete(result: Result): void;
  /** Ends the task `failed` with a JSON-RPC error: a protocol error, where a tool's own error completes with `isError`. */
  fail(error: { code: number; message: string }): void;
  /** Parks the task in `input_required` until every request is answered (in one tasks/update or several). */
  ask(requests: Record<string, unknown>, answered: (answers: Record<string, unknown>) => void): void;
}

const TERMINAL: ReadonlySet<Status> = new Set(['completed', 'failed', 'cancelled']);
const now = () => new Date().toISOString();
const text = (value: string) => ({ content: [{ type: 'text', text: value }] });

/**
 * Tasks in memory, shared by every server instance of one test server (2026-07-28 is
 * stateless: an instance per request). Ids are random and unguessable; a task is kept
 * until `close` (its `ttlMs` is ten minutes, longer than any test).
 */
export class TaskStore {
  private readonly tasks = new Map<string, Task>();

  /** Whether the request's client capabilities (its envelope) declare the extension. */
  offered(ctx: ServerContext): boolean {
    const caps = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
      { extensions?: Record<string, unknown> } | undefined;
    return typeof caps?.extensions?.[TASKS_EXTENSION] === 'object';
  }

  /** Refuses a request that needs the extension from a client that did not declare it (-32021, as SEP-2575 says). */
  require(ctx: ServerContext, what: string): void {
    if (!this.offered(ctx))
      throw new ProtocolError(-32021, `${what} needs the ${TASKS_EXTENSION} extension`, {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
  }

  /** Creates a task (durably: tasks/get finds it before the answer leaves), starts its work, and answers with the CreateTaskResult. */
  start(work: (run: TaskRun) => void): Result {
    const task: Task = {
      taskId: `task-${randomBytes(12).toString('hex')}`,
      status: 'working',
      createdAt: now(),
      lastUpdatedAt: now(),
      ttlMs: 600_000,
      pollIntervalMs: 50,
    };
    this.tasks.set(task.taskId, task);
    work(this.run(task));
    const { taskId, status, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs } = task;
    return { resultType: 'task', taskId, status, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs };
  }

  /** The extension's methods on `server`, whose capabilities must declare it. Unknown ids are -32602. */
  serve(server: Server): void {
    const schemas = { params: z.looseObject({ taskId: z.string() }), result: z.looseObject({}) };
    server.setRequestHandler('tasks/get', schemas, (params, ctx) => {
      this.require(ctx, 'tasks/get');
      const { answers: _answers, onAnswers: _onAnswers, timer: _timer, ...task } = this.known(params.taskId);
      return task;
    });
    server.setRequestHandler('tasks/update', schemas, (params, ctx) => {
      this.require(ctx, 'tasks/update');
      this.answer(this.known(params.taskId), ctx.mcpReq.inputResponses ?? {});
      return {};
    });
    server.setRequestHandler('tasks/cancel', schemas, (params, ctx) => {
      this.require(ctx, 'tasks/cancel');
      // Idempotent: a task already ended keeps its status, and the answer is the same empty ack.
      this.settle(this.known(params.taskId), 'cancelled');
      return {};
    });
  }

  close(): void {
    for (const task of this.tasks.values()) clearTimeout(task.timer);
  }

  private known(taskId: unknown): Task {
    const task = typeof taskId === 'string' ? this.tasks.get(taskId) : undefined;
    if (!task) throw new ProtocolError(-32602, `Unknown task: ${String(taskId)}`);
    return task;
  }

  private settle(task: Task, status: Status, outcome: Pick<Task, 'result' | 'error'> = {}): void {
    if (TERMINAL.has(task.status)) return;
    clearTimeout(task.timer);
    task.status = status;
    task.lastUpdatedAt = now();
    delete task.inputRequests;
    delete task.answers;
    delete task.onAnswers;
    Object.assign(task, outcome);
  }

  /** Answers the pending requests it names (others are ignored); the work resumes once none is pending. */
  private answer(task: Task, responses: Record<string, unknown>): void {
    const pending = task.inputRequests;
    if (task.status !== 'input_required' || !pending) return;
    for (const [key, response] of Object.entries(responses))
      if (key in pending) {
        task.answers = { ...task.answers, [key]: response };
        delete pending[key];
      }
    task.lastUpdatedAt = now();
    if (Object.keys(pending).length > 0) return;
    const { answers = {}, onAnswers } = task;
    task.status = 'working';
    delete task.inputRequests;
    delete task.answers;
    delete task.onAnswers;
    onAnswers?.(answers);
  }

  private run(task: Task): TaskRun {
    return {
      after: (ms, then) => {
        task.timer = setTimeout(() => TERMINAL.has(task.status) || then(), ms);
      },
      complete: (result) => this.settle(task, 'completed', { result }),
      fail: (error) => this.settle(task, 'failed', { error }),
      ask: (requests, answered) => {
        if (TERMINAL.has(task.status)) return;
        task.status = 'input_required';
        task.lastUpdatedAt = now();
        task.inputRequests = { ...requests };
        task.onAnswers = answered;
      },
    };
  }
}

/** A tool of a test server with tasks: its tools/list entry and its tools/call. */
export interface TaskTool {
  definition: Tool;
  call(args: Record<string, unknown>, ctx: ServerContext, tasks: TaskStore): Result | Promise<Result>;
}

type Property = { type: 'string' } | { type: 'number' } | { type: 'boolean' };

/**
 * A tool with its `taskSupport` (none: a sync tool). A `'required'` one refuses a client
 * without the extension (-32021) before its call runs, as the extension says; an
 * `'optional'` one decides in its call.
 */
function tool(
  name: string,
  description: string,
  properties: Record<string, Property>,
  taskSupport: 'optional' | 'required' | undefined,
  call: TaskTool['call'],
): TaskTool {
  return {
    definition: { name, description, inputSchema: { type: 'object', properties }, ...(taskSupport ? { execution: { taskSupport } } : {}) },
    call: (args, ctx, tasks) => {
      if (taskSupport === 'required') tasks.require(ctx, name);
      return call(args, ctx, tasks);
    },
  };
}

const elicit = (message: string, properties: Record<string, Property>) =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties, required: Object.keys(properties) } });

/**
 * The tools the runner's `tasks-*` scenarios (checks `tasks-*` and `sep-2663-*`) call by
 * name, its "Required server fixtures".
 */
export const TASK_TOOLS: TaskTool[] = [
  tool('greet', 'Greets, at once', { name: { type: 'string' } }, undefined, (args) => text(`Hello, ${String(args.name)}!`)),
  tool(
    'slow_compute',
    'Computes for `seconds` seconds, as a task when the client has the extension (else at once)',
    { seconds: { type: 'number' }, label: { type: 'string' } },
    'optional',
    (args, ctx, tasks) => {
      const label = String(args.label ?? '');
      if (!tasks.offered(ctx)) return text(`computed ${label} at once`);
      return tasks.start((run) => run.after(Number(args.seconds ?? 0) * 1000, () => run.complete(text(`computed ${label}`))));
    },
  ),
  tool('failing_job', 'A task whose tool fails after a second (a tool error, not a protocol error)', {}, 'required', (_args, _ctx, tasks) =>
    tasks.start((run) => run.after(1000, () => run.complete({ ...text('the job failed'), isError: true }))),
  ),
  tool('protocol_error_job', 'A task that ends in a protocol error', {}, 'optional', (_args, ctx, tasks) => {
    const error = { code: -32603, message: 'Internal error: the job crashed' };
    if (!tasks.offered(ctx)) throw new ProtocolError(error.code, error.message);
    return tasks.start((run) => run.after(100, () => run.fail(error)));
  }),
  tool('confirm_delete', 'Asks the client to confirm, as a task', { filename: { type: 'string' } }, 'required', (args, _ctx, tasks) => {
    const filename = String(args.filename);
    return tasks.start((run) =>
      run.ask({ confirm: elicit(`Delete ${filename}?`, { confirm: { type: 'boolean' } }) }, (answers) =>
        run.complete(text(acceptedContent(answers, 'confirm')?.confirm === true ? `deleted ${filename}` : `kept ${filename}`)),
      ),
    );
  }),
  tool('multi_input', 'A task that asks two questions at once', {}, 'required', (_args, _ctx, tasks) =>
    tasks.start((run) =>
      run.ask({ name: elicit('What is your name?', { name: { type: 'string' } }), confirm: elicit('Go ahead?', { confirm: { type: 'boolean' } }) }, (answers) =>
        run.complete(text(`both answered: ${Object.keys(answers).sort().join(', ')}`)),
      ),
    ),
  ),
  // Input first (SEP-2322, no task yet), then a task on the round that has the answer.
  tool('test_tool_with_task', 'Asks for a name, then greets it from a task', {}, 'required', (_args, ctx, tasks) => {
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'user_name')?.name;
    if (typeof name !== 'string') return inputRequired({ inputRequests: { user_name: elicit('What is your name?', { name: { type: 'string' } }) } });
    return tasks.start((run) => run.after(100, () => run.complete(text(`Hello, ${name}, from a task`))));
  }),
];
