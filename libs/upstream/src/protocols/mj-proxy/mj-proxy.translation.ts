import { isArtgenPathAction, type ArtgenPathAction, type NormalizedRequest } from '@gmg/contracts';
import type { ProtocolTranslation, Unsupported } from '../../translation';

/**
 * A midjourney-proxy (docs/upstreams/mj-proxy.md): the open-source bridges that put Midjourney's Discord bot behind
 * an HTTP API. Both public implementations are followed: the Java original and its C# successor (which adds the
 * `/mj-fast`, `/mj-turbo`, `/mj-relax` path prefixes, `botType`, `/mj/submit/action` and `/mj/submit/modal`).
 */
const MJ_PROXY_DOCS = [
  'https://github.com/novicezk/midjourney-proxy/blob/main/src/main/java/com/github/novicezk/midjourney/controller/SubmitController.java',
  'https://github.com/novicezk/midjourney-proxy/blob/main/src/main/java/com/github/novicezk/midjourney/ReturnCode.java',
  'https://github.com/novicezk/midjourney-proxy/blob/main/src/main/java/com/github/novicezk/midjourney/support/Task.java',
  'https://github.com/trueai-org/midjourney-proxy/blob/main/src/Midjourney.API/Controllers/SubmitController.cs',
  'https://github.com/trueai-org/midjourney-proxy/blob/main/src/Midjourney.API/Controllers/TaskController.cs',
  'https://github.com/trueai-org/midjourney-proxy/blob/main/src/Midjourney.Base/Dto/SubmitActionDTO.cs',
  'https://github.com/trueai-org/midjourney-proxy/blob/main/src/Midjourney.Base/Dto/SubmitModalDTO.cs',
  'https://github.com/trueai-org/midjourney-proxy/blob/main/src/Midjourney.Base/Models/TaskInfo.cs',
] as const;

/** The actions a proxy carries; the others have no proxy call that does what ours promise (see refine). */
const CARRIED: readonly ArtgenPathAction[] = [
  'imagine',
  'blend',
  'describe',
  'upscale',
  'variation',
  'high-variation',
  'low-variation',
  'reroll',
  'zoom',
  'pan',
  'inpaint',
  'modal',
];
const WHY_NOT: Partial<Record<ArtgenPathAction, string>> = {
  edits: 'the proxies disagree on its body (only the C# one has /mj/submit/edits, without a documented mask)',
  video: 'the proxy animates only an upscaled Midjourney image of its own (no start image of ours)',
  'remix-strong': 'Midjourney shows no remix button a proxy could press',
  'remix-subtle': 'Midjourney shows no remix button a proxy could press',
};
/** Follow-ups whose proxy button exists only on an upscaled image (Midjourney shows them under U1–U4 results). */
const SINGLE_IMAGE_BUTTONS: readonly ArtgenPathAction[] = ['high-variation', 'low-variation', 'zoom', 'inpaint'];
/** The zoom buttons Midjourney shows: Zoom Out 2x (`MJ::Outpaint::50`) and 1.5x (`…75`). */
export const MJ_ZOOM_RATIOS: readonly number[] = [2, 1.5];

export const actionOf = (req: Pick<NormalizedRequest, 'derived'>): ArtgenPathAction => {
  const a = req.derived.action;
  return isArtgenPathAction(a) ? a : 'imagine';
};

/** An action without a proxy call (asked before the field table: its fields would name the wrong problem). */
export function mjProxyActionProblem(req: Pick<NormalizedRequest, 'derived'>): Unsupported | undefined {
  const action = actionOf(req);
  if (CARRIED.includes(action)) return undefined;
  return { field: 'action', message: `\`${action}\` is not supported through the mj-proxy protocol: ${WHY_NOT[action] ?? 'no proxy call carries it'}` };
}

/** What the table cannot say: a button the proxy never shows, a zoom it has no button for, a new prompt on a button. */
function refineMjProxy(req: NormalizedRequest): Unsupported | undefined {
  const action = actionOf(req);
  const b = req.upstreamBody;
  if (SINGLE_IMAGE_BUTTONS.includes(action) && req.derived.parentAction !== 'upscale' && req.derived.parentAction !== 'pan') {
    return {
      field: 'task_id',
      message: `\`task_id\`: through the mj-proxy protocol ${action} needs an upscaled image (an upscale or pan task): Midjourney shows that button there only`,
    };
  }
  if (action === 'zoom' && b.zoom_ratio !== undefined && !MJ_ZOOM_RATIOS.includes(Number(b.zoom_ratio))) {
    return { field: 'zoom_ratio', message: '`zoom_ratio` must be 2 or 1.5 through the mj-proxy protocol (the Zoom Out buttons Midjourney shows)' };
  }
  if (action !== 'modal' && action !== 'imagine' && b.prompt !== undefined) {
    return {
      field: 'prompt',
      message: `\`prompt\` on ${action} is not supported through the mj-proxy protocol: a new prompt on a button needs the proxy's remix modal`,
    };
  }
  return undefined;
}

/** Fields the proxy needs as Base64: an inline value passes, a link is downloaded (bounded, public hosts only). */
const AS_BASE64 = 'a data URI or Base64 passes as it is; an http(s) link is downloaded (public hosts only, at most 10 MiB) and sent as a data URI';

export const MJ_PROXY_TRANSLATION: ProtocolTranslation = {
  protocol: 'mj-proxy',
  docs: MJ_PROXY_DOCS,
  families: [
    {
      family: 'artgen (the art suite)',
      models: ['artgen'],
      fields: {
        prompt: { to: 'prompt', note: 'imagine: with the structured fields below as Midjourney flags where the prompt has none; modal: as it is' },
        size: { to: 'prompt', note: '`--ar W:H` appended unless the prompt has `--ar`' },
        version: { to: 'prompt', note: '`--v N` (altstyle7 / altstyle6: `--niji 7` / `--niji 6`) unless the prompt has `--v` or `--niji`' },
        alt_style: { to: 'prompt', note: '`--niji` (the version decides its number) and `botType: NIJI_JOURNEY`' },
        speed: { to: 'path', note: '`fast` → `/mj-fast/mj/…`, `turbo` → `/mj-turbo/mj/…`; relax (the same as omitted) → `/mj/…`' },
        image_urls: {
          to: 'prompt / base64Array / base64',
          note: `imagine: links lead the prompt as image prompts, inline images go in \`base64Array\`; blend: \`base64Array\`; describe: \`base64\` (${AS_BASE64})`,
        },
        dimensions: { to: 'dimensions', note: 'blend: PORTRAIT / SQUARE / LANDSCAPE, as ours' },
        mask_url: { to: 'maskBase64', note: `modal (${AS_BASE64})` },
        metadata: { to: 'state', note: 'as JSON text: the proxy keeps `state` with its task' },
        task_id: { to: 'taskId', note: "the parent's proxy task: its button for the action is read from `GET /mj/task/{id}/fetch` and pressed" },
        index: { to: 'customId', note: "chooses the parent's button (`MJ::JOB::upsample::<index>::…`)" },
        zoom_ratio: { to: 'customId', note: '2 → `MJ::Outpaint::50::…`, 1.5 → `MJ::Outpaint::75::…`; any other ratio is refused' },
        direction: { to: 'customId', note: '`MJ::JOB::pan_<direction>::…`' },
        motion: { refuse: 'video is not carried by the mj-proxy protocol' },
        batch_size: { refuse: 'video is not carried by the mj-proxy protocol' },
        resolution: { refuse: 'video is not carried by the mj-proxy protocol' },
      },
      refine: refineMjProxy,
    },
  ],
};
