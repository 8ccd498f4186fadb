// The logger every layer is handed by whoever starts it (bin/ builds a pino logger): only the calls the code
// makes, so nothing below bin/ depends on a logging library or imports bin/. A pino Logger fits it as it is.
export interface Logger {
  debug(obj: object, msg?: string): void;
  debug(msg: string): void;
  info(obj: object, msg?: string): void;
  info(msg: string): void;
  warn(obj: object, msg?: string): void;
  warn(msg: string): void;
  error(obj: object, msg?: string): void;
  error(msg: string): void;
}
