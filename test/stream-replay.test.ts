import { describe, expect, it } from 'vitest';
import { StreamReplay } from '../src/gateway/stream-replay.js';

/** What a process keeps for resumptions is bounded in bytes, per stream and in all, besides its counts. */
const collect = async (events: AsyncIterable<string> | null) => {
  const out: string[] = [];
  for await (const e of events ?? []) out.push(e);
  return out;
};

describe('stream replay budgets', () => {
  it('drops the oldest events of a stream past its byte budget: a resumption from before them finds nothing, a later one the rest', async () => {
    const replay = new StreamReplay({ perStream: 2_000, total: 1 << 20 });
    const writer = replay.open('s1');
    const ids = Array.from({ length: 10 }, (_, i) => /^id: (\S+)/.exec(writer.event({ i, pad: 'x'.repeat(400) }))![1]!);
    writer.end();
    expect(replay.resume('s1', ids[0]!)).toBeNull();
    const rest = await collect(replay.resume('s1', ids[7]!));
    expect(rest.map((e) => JSON.parse(/data: (.*)/.exec(e)![1]!).i)).toEqual([8, 9]);
  });

  it('forgets the oldest streams past the total budget, ending a resumption that reads one', async () => {
    const replay = new StreamReplay({ perStream: 10_000, total: 5_000 });
    const first = replay.open('s1');
    const firstId = /^id: (\S+)/.exec(first.event({ pad: 'a'.repeat(1_000) }))![1]!;
    const reading = collect(replay.resume('s1', firstId));
    const second = replay.open('s2');
    for (let i = 0; i < 5; i++) second.event({ pad: 'b'.repeat(1_000) });
    // The first stream was dropped for room: its reader ends instead of waiting, and it cannot be resumed again.
    expect(await reading).toEqual([]);
    expect(replay.resume('s1', firstId)).toBeNull();
    first.event({ after: true });
    first.end();
    second.end();
  });

  it('answers null for a stream that ended with nothing after the id (a new stream serves the host better than an empty one)', async () => {
    const replay = new StreamReplay();
    const writer = replay.open('s1');
    const ids = [writer.event({ i: 1 }), writer.event({ i: 2 })].map((e) => /^id: (\S+)/.exec(e)![1]!);
    writer.end();
    expect(await collect(replay.resume('s1', ids[0]!))).toHaveLength(1);
    expect(replay.resume('s1', ids[1]!)).toBeNull();
  });

  it('ends a resumption whose reader went away', async () => {
    const replay = new StreamReplay();
    const writer = replay.open('s1');
    const gone = new AbortController();
    const reading = collect(replay.resume('s1', `${writer.stream}:0`, gone.signal));
    writer.event({ i: 1 });
    gone.abort();
    expect(await reading).toHaveLength(1);
    writer.end();
  });
});
