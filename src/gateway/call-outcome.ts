import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { CallRecord } from './call-record.js';
import type { HostReply, Outcome } from './call-model.js';
import { isAnswerTo } from './relay.js';

const EXPIRED = 'the upstream session expired; the host must initialize again';

/**
 * The one place a host request's call-log row is written: every outcome of the
 * dispatcher passes here on its way to the host (and a held call that ends without
 * one, bridge-held-calls.ts). A streamed outcome's row is written right after its
 * answer is handed on (the host's write goes first), before the process reads any
 * more I/O, so it exists once the host has the answer; the stream ends there and
 * the rest of the upstream's stream is read in the background (nobody has to drain
 * it for the row to be written). CallRecord writes at most one row per request.
 */
export function settle(record: CallRecord, outcome: Outcome): HostReply {
  switch (outcome.kind) {
    case 'answer': {
      record.finish(outcome.message, 0, outcome.failure);
      return { kind: 'json', message: outcome.message, ...(outcome.newSession ? { newSession: outcome.newSession } : {}) };
    }
    case 'stream':
      return { kind: 'stream', messages: loggedStream(record, outcome.requestId, outcome.messages) };
    case 'accepted':
      if (outcome.logged) record.finish(null, 0, outcome.logged.failure);
      return { kind: 'accepted' };
    case 'session-expired':
      record.finish(null, 0, EXPIRED);
      return { kind: 'session-expired' };
    case 'ended':
      record.finish(null, 0, outcome.failure);
      return { kind: 'accepted' };
  }
}

async function* loggedStream(record: CallRecord, requestId: RequestId, messages: AsyncIterable<JSONRPCMessage>): AsyncGenerator<JSONRPCMessage> {
  const it = messages[Symbol.asyncIterator]();
  let relayed = 0;
  let answered = false;
  try {
    for (;;) {
      const step = await it.next();
      if (step.done) break;
      if (isAnswerTo(requestId, step.value)) {
        answered = true;
        void drain(it);
        // The answer is handed on before its row is built and spooled, which is then off the host's wait: the
        // consumer sends it and comes back for the stream's end in the same run of microtasks (or, if it does not
        // come back, the tick fallback), so the row is written before this process reads anything more (another
        // request, a flush) and exists for anyone who could have seen the answer.
        process.nextTick(() => record.finish(step.value, relayed));
        try {
          yield step.value;
        } finally {
          record.finish(step.value, relayed);
        }
        return;
      }
      relayed += JSON.stringify(step.value).length;
      yield step.value;
    }
  } finally {
    if (!answered) {
      record.finish(null, relayed, 'the answer stream ended without an answer');
      // Stopped early (the consumer let go): the upstream side frees what it holds.
      void it.return?.()?.catch(() => undefined);
    }
  }
}

async function drain(it: AsyncIterator<JSONRPCMessage>): Promise<void> {
  try {
    while (!(await it.next()).done);
  } catch {
    /* the host has its answer and the row is written: the rest of the upstream's stream is of no one's concern */
  }
}
