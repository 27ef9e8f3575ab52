/** Thrown when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
