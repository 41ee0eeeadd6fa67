/**
 * Runs before every test file (vitest.config.ts). Files share their worker process, and so
 * its GPU device and compiled pipelines; each file's runtimes end with it.
 */
import { afterAll } from 'vitest';
import { endTestRuntimes } from './gpu/testUtils';

afterAll(endTestRuntimes);
