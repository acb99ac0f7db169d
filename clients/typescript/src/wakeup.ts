/**
 * Where a queue's one consumer sleeps until its producer has something:
 * `wait()` resolves at the next `notify()`. Each queue owns one.
 */
export class Wakeup {
  private wake: (() => void) | null = null;

  wait(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve));
  }

  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
