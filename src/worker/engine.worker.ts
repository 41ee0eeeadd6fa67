import { expose } from 'comlink';
import { browserPlatform } from '../platform/browser';
import { createEngine } from './engine';

expose(createEngine(browserPlatform));
