/**
 * What doctor says of the node's exposure (docs/security.md): a pull page
 * that answers anyone beyond loopback, a password sent in the clear, and a
 * secret in a file other users can read (l9gpu.ini is read by every user's
 * `l9gpu jobs`; the secrets belong in files of root's alone).
 */
import { readSection } from '../core/config/read.js';
import type { Config } from '../core/config/load.js';
import { readableByOthers } from '../core/net/secret-files.js';
import { PROMETHEUS_SECTION } from '../sinks/sections.js';
import { hidesPersonal, loopbackOnly } from '../sinks/prometheus.js';
import { takeWebConfig } from '../sinks/web/web-state.js';

const PEOPLE_HIDDEN = ' (the labels that name people are left off: personal_labels)';
const PEOPLE_SHOWN = ", and every user's name, account and job name (personal_labels = show)";

export interface SecurityFinding {
  /** warn: said, the exit status kept; problem: counted as one. */
  readonly level: 'warn' | 'problem';
  readonly what: string;
  readonly fix: string;
}

/** The keys that name a file holding a secret. */
const SECRET_FILE = /(^|_)(headers_file|token_file|client_key)$/;

export function securityFindings(cfg: Config, enabledSinks: ReadonlySet<string>): SecurityFinding[] {
  const out: SecurityFinding[] = [];
  if (enabledSinks.has('prometheus')) out.push(...pullPage(cfg));
  // the configuration file itself: every user's l9gpu reads it, so a secret written there is every user's
  if (cfg.file && readableByOthers(cfg.file)) {
    const inFile: string[] = [];
    for (const s of cfg.sections) {
      for (const k of s.keys) {
        if (!k.secret || cfg.sourceOf(s.name, k.key).source !== 'file') continue;
        const v = cfg.get(s.name, k.key);
        if (v === null || v === '' || (typeof v === 'object' && Object.keys(v).length === 0)) continue;
        inFile.push(`[${s.name}] ${k.key}`);
      }
    }
    if (inFile.length) {
      out.push({
        level: 'warn',
        what: `${cfg.file} is readable by every user and holds ${inFile.join(', ')}`,
        fix:
          "move them to the section's headers_file or token_file (readable by root alone: chmod 600); " +
          "l9gpu.ini stays readable for users' l9gpu jobs",
      });
    }
  }
  for (const s of cfg.sections) {
    for (const k of s.keys) {
      if (k.type !== 'path' || !SECRET_FILE.test(k.key)) continue;
      const path = cfg.get(s.name, k.key);
      if (typeof path === 'string' && readableByOthers(path))
        out.push({
          level: 'warn',
          what: `[${s.name}] ${k.key} ${path} is readable by other users`,
          fix: `chmod 600 ${path} (root alone reads it)`,
        });
    }
  }
  return out;
}

function pullPage(cfg: Config): SecurityFinding[] {
  const s = readSection(cfg, PROMETHEUS_SECTION);
  const host = s.host ?? '0.0.0.0';
  const where = `${host}:${s.port}`;
  const out: SecurityFinding[] = [];
  let users = 0;
  let tls = false;
  let verified = false;
  if (s.web_config) {
    let w;
    try {
      w = takeWebConfig(s.web_config);
    } catch {
      // the sink's probe says why it cannot be used
      return out;
    }
    users = w.config.users.size;
    tls = !!w.config.tls;
    verified = w.config.tls?.clientAuth === 'RequireAndVerifyClientCert';
    const inline = w.config.tls?.key.inline !== undefined;
    if (inline && readableByOthers(s.web_config))
      out.push({
        level: 'warn',
        what: `[prometheus] web_config ${s.web_config} holds the TLS key inline and is readable by other users`,
        fix: `chmod 600 ${s.web_config}, or move the key to a key_file of root's alone`,
      });
    const keyFile = w.config.tls?.key.path;
    if (keyFile && readableByOthers(keyFile))
      out.push({ level: 'warn', what: `the pull page's TLS key ${keyFile} is readable by other users`, fix: `chmod 600 ${keyFile}` });
    if (users > 0 && !tls && !loopbackOnly(host))
      out.push({
        level: 'warn',
        what: `the pull page on ${where} takes basic-auth passwords over plain HTTP: they cross the network in the clear`,
        fix: 'add tls_server_config (cert_file, key_file) to the web_config',
      });
  }
  const authenticated = users > 0 || verified;
  if (!authenticated && !loopbackOnly(host)) {
    const hidden = hidesPersonal(s.personal_labels, host, false);
    out.push({
      level: 'warn',
      what:
        `the pull page on ${where} answers anyone who reaches the port, without authentication${tls ? '' : ' or TLS'}: ` +
        `every job's id, partition and GPU ` +
        `series${hidden ? PEOPLE_HIDDEN : PEOPLE_SHOWN}`,
      fix:
        'set [prometheus] web_config with basic_auth_users or a client CA and client_auth_type = ' +
        'RequireAndVerifyClientCert, or host = 127.0.0.1 (docs/security.md)',
    });
  }
  return out;
}
