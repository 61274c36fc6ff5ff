/**
 * Flags as data: the oclif commands (help, parsing) and the light daemon
 * entry (node:util, no oclif) are both built from these specs.
 */
export interface FlagSpec {
  readonly name: string;
  readonly type: 'string' | 'boolean';
  readonly char?: string;
  readonly multiple?: boolean;
  readonly options?: readonly string[];
  readonly helpValue?: string;
  readonly description: string;
}

/** --config, the same on every command that reads the configuration. */
export const CONFIG_FLAG: FlagSpec = {
  name: 'config',
  type: 'string',
  char: 'c',
  helpValue: 'FILE',
  description: 'INI configuration file (default /etc/l9gpu/l9gpu.ini, or $L9GPU_CONFIG).',
};
