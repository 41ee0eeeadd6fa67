import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Runs a TypeScript script in Node; resolves its exit code, with its output so far. */
function start(script: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const waitFor = async (text: string) => {
    while (!out.includes(text)) await new Promise((r) => setTimeout(r, 50));
  };
  return { exited, waitFor, signal: () => child.kill('SIGINT'), output: () => out };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Ctrl-C on a long command', () => {
  it('one press that arrives twice (the terminal\'s signal and a wrapper\'s relay) stops cleanly once; a second, later press quits at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-interrupt-'));
    const script = join(dir, 'long.ts');
    writeFileSync(
      script,
      `import { onInterrupt } from ${JSON.stringify(resolve('src/cli/interrupt.ts'))};
let stops = 0;
onInterrupt(() => console.log('stop ' + ++stops));
console.log('ready');
setTimeout(() => { console.log('finished cleanly after ' + stops + ' stop'); process.exit(0); }, 2500);
`,
    );
    const once = start(script);
    await once.waitFor('ready');
    once.signal();
    await pause(20);
    once.signal();
    expect(await once.exited).toBe(0);
    expect(once.output()).toContain('stop 1\n');
    expect(once.output()).not.toContain('stop 2');
    expect(once.output()).toContain('finished cleanly after 1 stop');

    const twice = start(script);
    await twice.waitFor('ready');
    twice.signal();
    await twice.waitFor('stop 1');
    await pause(1200);
    twice.signal();
    expect(await twice.exited).toBe(130);
    expect(twice.output()).not.toContain('finished cleanly');
  }, 60_000);
});
