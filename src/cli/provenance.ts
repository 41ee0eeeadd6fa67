/**
 * Where a run's code came from: the git commit of this checkout and whether its tracked files
 * differ from it. Absent where the code is not a git checkout of its own (a kit, a copy).
 */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface SourceCommit {
  commit: string;
  /** Tracked files differ from the commit (untracked files, such as runs/, are not counted). */
  dirty: boolean;
}

/** The commit the code in `dir` (default: this checkout) runs from; null without git or outside a checkout of it. */
export function sourceCommit(dir = root): SourceCommit | null {
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    // A copy without .git inside some other repository would report that repository's commit.
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== realpathSync(dir)) return null;
    return { commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return null;
  }
}
