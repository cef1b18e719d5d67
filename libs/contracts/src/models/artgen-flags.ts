/**
 * Native prompt flags of the art suite (`a cat --ar 16:9 --v 7 --style raw`). The flags stay in the prompt sent
 * upstream (the upstream reads them itself); the gateway parses the ones that change eligibility, billing or the
 * output shape into structured facts, and refuses malformed values instead of letting the upstream guess.
 */
export interface ArtgenFlags {
  /** `--ar W:H` / `--aspect W:H`. */
  aspect?: string;
  /** `--v N` / `--version N` (raw text, normalized by the caller). */
  version?: string;
  /** `--niji [N]`: the alternate style, optionally with its version. */
  altStyle?: boolean;
  altStyleVersion?: string;
  /** `--fast` / `--turbo` / `--relax`. */
  speed?: 'fast' | 'turbo' | 'relax';
  /** `--style raw` and similar; passed through. */
  style?: string;
}

export type FlagParse = { ok: true; flags: ArtgenFlags } | { ok: false; message: string };

const RATIO = /^(\d{1,3}):(\d{1,3})$/;
const VERSION = /^\d+(?:\.\d+)?$/;

/** A `W:H` ratio with positive sides whose long/short quotient is at most 4 (wider breaks the grid). */
export function ratioProblem(ratio: string): string | undefined {
  const m = RATIO.exec(ratio);
  if (!m) return `must be a ratio W:H of whole numbers (for example 16:9), got '${ratio}'`;
  const [w, h] = [Number(m[1]), Number(m[2])];
  if (w === 0 || h === 0) return `must have both sides above 0, got '${ratio}'`;
  if (Math.max(w, h) / Math.min(w, h) > 4) return `must not be wider or taller than 4:1, got '${ratio}'`;
  return undefined;
}

/** Parses `--flag value` pairs; unknown flags are ignored (the upstream may know them). */
export function parseArtgenFlags(prompt: string): FlagParse {
  const tokens = prompt.split(/\s+/).filter(Boolean);
  const flags: ArtgenFlags = {};
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!.toLowerCase();
    if (!t.startsWith('--')) continue;
    const next = tokens[i + 1];
    const value = next !== undefined && !next.startsWith('--') ? next : undefined;
    switch (t) {
      case '--ar':
      case '--aspect': {
        if (value === undefined) return { ok: false, message: `\`prompt\`: ${t} needs a ratio such as 16:9` };
        const problem = ratioProblem(value);
        if (problem) return { ok: false, message: `\`prompt\`: ${t} ${problem}` };
        flags.aspect = value;
        i++;
        break;
      }
      case '--v':
      case '--version':
        if (value === undefined || !VERSION.test(value)) return { ok: false, message: `\`prompt\`: ${t} needs a version number such as 7 or 8.2` };
        flags.version = value;
        i++;
        break;
      case '--niji':
        flags.altStyle = true;
        if (value !== undefined && VERSION.test(value)) {
          flags.altStyleVersion = value;
          i++;
        }
        break;
      case '--fast':
      case '--turbo':
      case '--relax':
        flags.speed = t.slice(2) as ArtgenFlags['speed'];
        break;
      case '--style':
        if (value !== undefined) {
          flags.style = value;
          i++;
        }
        break;
      default:
        break;
    }
  }
  return { ok: true, flags };
}
