// The one error every sandbox module throws when the sandbox cannot be set up as promised (tasks/sandbox.ts):
// nothing runs then, and the caller says so instead of running untrusted code with a limit missing.
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}
