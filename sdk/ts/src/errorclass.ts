// The shapes of the SDK's error classes, written once: an error class is
// `class X extends <shape>(...) {}`, its name (and engine class, or
// message) fixed by the shape.

/** An Error class named `name` whose failures have the engine class `cls`; it takes a message (and a cause). */
export function classedError<N extends string, C extends string>(name: N, cls: C) {
  return class extends Error {
    override readonly name: N = name;
    readonly class: C = cls;
    constructor(message: string, options?: { cause?: unknown }) {
      super(message, options);
    }
  };
}

/** An Error class named `name` whose message is always `message` (a signal's reason, a marker to let through). */
export function fixedError<N extends string>(name: N, message: string) {
  return class extends Error {
    override readonly name: N = name;
    constructor() {
      super(message);
    }
  };
}
