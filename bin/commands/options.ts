// Option parsers shared by the command groups: each turns a flag's text into a checked value or throws a
// message naming the flag, so every command refuses bad input the same way.

export function intOption(name: string, min: number, max?: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || (max !== undefined && n > max)) {
      throw new Error(
        `--${name} must be an integer ${max === undefined ? `>= ${min}` : `in [${min}, ${max}]`}, got ${JSON.stringify(value)}`,
      );
    }
    return n;
  };
}

/** Any whole number; the range is a rule of what it sets, checked there with its own message. */
export function integerOption(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n))
      throw new Error(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
    return n;
  };
}

export function numberOption(name: string, min: number, max: number, exclusiveMin = false) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || (exclusiveMin ? n <= min : n < min) || n > max) {
      throw new Error(
        `--${name} must be a number in ${exclusiveMin ? '(' : '['}${min}, ${max}], got ${JSON.stringify(value)}`,
      );
    }
    return n;
  };
}

export function choice<T extends string>(name: string, options: readonly T[]) {
  return (value: string): T => {
    if (!options.includes(value as T))
      throw new Error(`--${name} must be one of ${options.join(', ')}, got ${JSON.stringify(value)}`);
    return value as T;
  };
}
