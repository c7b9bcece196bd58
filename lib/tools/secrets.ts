/**
 * Where tools read credentials: Secrets Manager in AWS, the environment locally (the composition
 * root provides it). Values are never logged and never put into tool output.
 */
export interface SecretSource {
  /** The secret's value, or undefined when it is not set. */
  get(name: string): Promise<string | undefined>;
}
