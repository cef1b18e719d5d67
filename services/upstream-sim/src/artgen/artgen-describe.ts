import { createHash } from 'node:crypto';

const SUBJECTS = [
  'a lighthouse on a basalt cliff',
  'a fox curled in fresh snow',
  'a quiet tram stop at dusk',
  'a glass greenhouse full of ferns',
  'an old fishing boat in fog',
  'a desert canyon lit by lanterns',
  'a koi pond under maple trees',
  'a mountain monastery above clouds',
];
const STYLES = [
  'watercolor illustration',
  'cinematic photograph',
  'gouache painting',
  'isometric 3d render',
  'ink and wash drawing',
  'oil painting with thick impasto',
  'soft pastel sketch',
  'analog film still',
];
const MOODS = ['warm golden light', 'cool blue hour tones', 'muted earthy palette', 'high contrast chiaroscuro', 'dreamy haze', 'vivid saturated colors'];
const NUMBERS = ['1️⃣', '2️⃣', '3️⃣', '4️⃣'];

/** Four prompts "describing" the given images: deterministic per input, distinct from each other. */
export function describePrompts(imageUrls: readonly string[]): string[] {
  const d = createHash('sha256').update(imageUrls.join('\n')).digest();
  return NUMBERS.map((_, i) => {
    const subject = SUBJECTS[(d[0] + i) % SUBJECTS.length];
    const style = STYLES[(d[1] + 3 * i) % STYLES.length];
    const mood = MOODS[(d[2] + i) % MOODS.length];
    return `${subject}, ${style}, ${mood} --ar 1:1`;
  });
}

/** The single text the suite returns in `prompt` / `description`: numbered prompts separated by blank lines. */
export function describeText(prompts: readonly string[]): string {
  return prompts.map((p, i) => `${NUMBERS[i]} ${p}`).join('\n\n');
}

/** Describe answers within its request after 1-3 s (times the sim's scale), deterministic per input. */
export function describeDelayMs(imageUrls: readonly string[], timeScale: number): number {
  const d = createHash('sha256').update(imageUrls.join('\n')).digest();
  return Math.round((1000 + (d.readUInt16BE(4) % 2001)) * timeScale);
}
