import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KIT_SOURCE_FILE, sourceCommit } from './provenance';

describe('source commit', () => {
  it('names the commit of a checkout and whether its tracked files differ; none outside a checkout of its own', () => {
    const repo = mkdtempSync(join(tmpdir(), 'sage-provenance-'));
    const git = (...args: string[]) => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
    expect(sourceCommit(repo)).toBeNull();
    git('init', '-q');
    writeFileSync(join(repo, 'a.txt'), 'one');
    git('add', 'a.txt');
    git('commit', '-qm', 'one');
    const head = git('rev-parse', 'HEAD');
    expect(sourceCommit(repo)).toEqual({ commit: head, dirty: false });
    // An untracked file (a run's folder) leaves it clean; a changed tracked file does not.
    writeFileSync(join(repo, 'b.txt'), 'new');
    expect(sourceCommit(repo)).toEqual({ commit: head, dirty: false });
    writeFileSync(join(repo, 'a.txt'), 'two');
    expect(sourceCommit(repo)).toEqual({ commit: head, dirty: true });
    // A copy of the code inside another repository is not that repository's commit.
    mkdirSync(join(repo, 'copy'));
    expect(sourceCommit(join(repo, 'copy'))).toBeNull();
    // A kit built inside it carries the commit it was built from; a malformed stamp is none.
    writeFileSync(join(repo, 'copy', KIT_SOURCE_FILE), JSON.stringify({ commit: head, dirty: true }));
    expect(sourceCommit(join(repo, 'copy'))).toEqual({ commit: head, dirty: true });
    writeFileSync(join(repo, 'copy', KIT_SOURCE_FILE), JSON.stringify({ commit: head }));
    expect(sourceCommit(join(repo, 'copy'))).toBeNull();
  });
});
