import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { chatBodyProblem } from '@gmg/contracts';
import { IMAGE_TOKENS, textTokens, toolInput, type Json } from '../../messages/messages-sim.reply';
import type { VendorSimContext } from '../vendor-sim-kit';
import { refuse, sendOpenAiError } from './openai-sim.shared';

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a chat message's content (a string, or its text parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObj(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join(' ');
}

/** Prompt tokens: the JSON text of messages + tools with image parts taken out, plus IMAGE_TOKENS per image (as the messages mode counts). */
function promptTokens(body: Json): { tokens: number; images: number } {
  let images = 0;
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isObj(v)) return v;
    if (v.type === 'image_url') {
      images++;
      return null;
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strip(x)]));
  };
  return { tokens: textTokens(JSON.stringify(strip({ messages: body.messages, tools: body.tools ?? null }))) + images * IMAGE_TOKENS, images };
}

interface ChatReply {
  text: string | null;
  call?: { id: string; name: string; arguments: string };
  finish: 'stop' | 'length' | 'tool_calls';
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

/** The deterministic answer: a tool call when tools are offered and the last turn is not a tool result, else an echo of the last user text. */
function replyTo(body: Json): ChatReply {
  const messages = body.messages as Json[];
  const last = messages[messages.length - 1];
  const { tokens, images } = promptTokens(body);
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]).filter(isObj) : [];
  let text: string | null = null;
  let call: ChatReply['call'];
  let finish: ChatReply['finish'] = 'stop';
  if (tools.length > 0 && body.tool_choice !== 'none' && last.role !== 'tool') {
    const forced = isObj(body.tool_choice) && isObj(body.tool_choice.function) ? body.tool_choice.function.name : undefined;
    const tool = tools.find((t) => isObj(t.function) && t.function.name === forced) ?? tools[0];
    const fn = tool.function as Json;
    call = { id: `call_${randomBytes(12).toString('hex')}`, name: String(fn.name), arguments: JSON.stringify(toolInput({ input_schema: fn.parameters })) };
    finish = 'tool_calls';
  } else {
    const user = [...messages].reverse().find((m) => m.role === 'user');
    const seen = images > 0 ? ` I see ${images} image${images === 1 ? '' : 's'}.` : '';
    text = last.role === 'tool' ? `Hello!${seen} Tool result received: ${textOf(last.content)}` : `Hello!${seen} You said: ${textOf(user?.content).trim()}`;
    const max = Number(body.max_completion_tokens ?? body.max_tokens ?? Infinity);
    if (textTokens(text) > max) {
      text = text.slice(0, max * 4);
      finish = 'length';
    }
  }
  const completion = call ? textTokens(call.arguments) : textTokens(text ?? '');
  return {
    text,
    call,
    finish,
    usage: { prompt_tokens: tokens, completion_tokens: completion, total_tokens: tokens + completion, prompt_tokens_details: { cached_tokens: 0 } },
  };
}

/**
 * OpenAI's chat completions (`POST /v1/chat/completions`, https://platform.openai.com/docs/api-reference/chat/create)
 * under `/openai`: strict as the vendor (libs/contracts chat-rules.ts: a refused body is a 400 in OpenAI's error shape),
 * a deterministic answer (so a test can compute the usage), `stream: true` as `chat.completion.chunk` events ending in
 * `data: [DONE]`, with a last usage chunk (empty `choices`) only under `stream_options.include_usage`.
 * `[sim:429]` in the last user text: 429 `rate_limit_exceeded`.
 */
export function chatHandler(ctx: VendorSimContext) {
  return (req: Request, res: Response): void => {
    const body = req.body as Json;
    const problem = chatBodyProblem(body);
    if (problem) refuse(problem.param, problem.code, problem.message);
    const messages = body.messages as Json[];
    const said = textOf([...messages].reverse().find((m) => m.role === 'user')?.content);
    if (said.includes('[sim:429]')) {
      res.setHeader('retry-after', '1');
      return sendOpenAiError(res, 429, 'Rate limit reached for requests', null, 'rate_limit_exceeded', 'requests');
    }
    const r = replyTo(body);
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(ctx.now() / 1000);
    const model = body.model as string;
    res.setHeader('x-request-id', `req_sim_${randomBytes(8).toString('hex')}`);
    ctx.log.info({ id, model, stream: body.stream === true, usage: r.usage }, 'openai chat call answered');
    const toolCalls = r.call ? [{ id: r.call.id, type: 'function', function: { name: r.call.name, arguments: r.call.arguments } }] : undefined;
    if (body.stream !== true) {
      res.json({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: r.text, refusal: null, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
            logprobs: null,
            finish_reason: r.finish,
          },
        ],
        usage: r.usage,
        system_fingerprint: 'fp_sim',
      });
      return;
    }
    const withUsage = isObj(body.stream_options) && body.stream_options.include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const chunk = (delta: Json, finish: string | null = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_sim', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(withUsage ? { usage: null } : {}) })}\n\n`;
    let out = chunk({ role: 'assistant', content: r.call ? null : '', refusal: null });
    for (const piece of r.text?.match(/\S+\s*|\s+/g) ?? []) out += chunk({ content: piece });
    if (r.call) {
      out += chunk({ tool_calls: [{ index: 0, id: r.call.id, type: 'function', function: { name: r.call.name, arguments: '' } }] });
      for (let i = 0; i < r.call.arguments.length; i += 8)
        out += chunk({ tool_calls: [{ index: 0, function: { arguments: r.call.arguments.slice(i, i + 8) } }] });
    }
    out += chunk({}, r.finish);
    if (withUsage)
      out += `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_sim', choices: [], usage: r.usage })}\n\n`;
    res.end(`${out}data: [DONE]\n\n`);
  };
}
