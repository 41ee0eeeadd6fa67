/**
 * Where a run's code came from: the git commit of this checkout and whether its tracked files
 * differ from it, or in a kit (npm run gpu-kit, which has no git) the commit it was built from.
 * Absent where the code is neither (a copy).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface SourceCommit {
  commit: string;
  /** Tracked files differ from the commit (untracked files, such as runs/, are not counted). */
  dirty: boolean;
}

/** The file at a kit's root that names the commit it was built from (a SourceCommit as JSON). */
export const KIT_SOURCE_FILE = 'source.json';

/** The commit the code in `dir` (default: this checkout, or this kit) runs from; null for a copy that is neither. */
export function sourceCommit(dir = root): SourceCommit | null {
  return checkoutCommit(dir) ?? kitCommit(dir);
}

function kitCommit(dir: string): SourceCommit | null {
  try {
    const s = JSON.parse(readFileSync(join(dir, KIT_SOURCE_FILE), 'utf8')) as Partial<SourceCommit>;
    return typeof s.commit === 'string' && typeof s.dirty === 'boolean' ? { commit: s.commit, dirty: s.dirty } : null;
  } catch {
    return null;
  }
}

function checkoutCommit(dir: string): SourceCommit | null {
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    // A copy without .git inside some other repository would report that repository's commit.
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== realpathSync(dir)) return null;
    return { commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return null;
  }
}
