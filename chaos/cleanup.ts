// What a run must undo however it ends (success, failure, an exception, Ctrl-C): the services,
// the private Redis and PostgreSQL, the run directory. Undone in reverse order, each step once.

export class Cleanup {
  private readonly steps: Array<{ what: string; undo: () => Promise<void> | void }> = [];
  private running: Promise<void> | undefined;

  add(what: string, undo: () => Promise<void> | void): void {
    this.steps.push({ what, undo });
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.undo();
        } catch (err) {
          console.error(`cleanup: could not ${step.what}: ${(err as Error).message}`);
        }
      }
    })();
    return this.running;
  }
}
