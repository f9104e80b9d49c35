/** Time is a dependency: everything that expires reads a Clock, so tests move time instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class ManualClock implements Clock {
  constructor(private current = Date.now()) {}
  now(): number {
    return this.current;
  }
  advance(seconds: number): void {
    this.current += seconds * 1000;
  }
}

export const epochSeconds = (clock: Clock): number => Math.floor(clock.now() / 1000);
