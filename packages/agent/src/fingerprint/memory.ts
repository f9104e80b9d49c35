/** The machine's memory, as Nomad's `memory` fingerprinter reports it (`memory.totalbytes`). */
import os from 'node:os';

export interface MemoryFingerprint {
  totalBytes: number;
}

export function fingerprintMemory(): MemoryFingerprint {
  return { totalBytes: os.totalmem() };
}
