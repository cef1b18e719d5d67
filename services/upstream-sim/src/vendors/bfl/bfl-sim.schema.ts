/**
 * The FLUX.2 input schema as BFL's API checks it, with its FastAPI/pydantic 422 answer
 * (`{detail: [{type, loc, msg}]}`). Sources: BFL's API reference for FLUX.2 [pro]/[flex]
 * (https://docs.bfl.ai/api-reference/models/generate-or-edit-an-image-with-flux2-[pro]) and its technical
 * specifications (https://help.bfl.ai/articles/4029171097-flux-2-technical-specifications: sides >= 64, multiples of
 * 16). Stricter than BFL on two points, on purpose (a translation that leaks one of our fields must fail a test):
 * fields the model's schema does not list are refused (`extra_forbidden`), and a `data:` URI is not an image.
 */

export interface BflValidationError {
  type: string;
  loc: (string | number)[];
  msg: string;
}

export type BflModel = 'flux-2-pro' | 'flux-2-max' | 'flux-2-flex';
export const BFL_SIM_MODELS: readonly BflModel[] = ['flux-2-pro', 'flux-2-max', 'flux-2-flex'];

type Check = (v: unknown) => Omit<BflValidationError, 'loc'> | undefined;

const intType: Check = (v) => (Number.isInteger(v) ? undefined : { type: 'int_type', msg: 'Input should be a valid integer' });
const numType: Check = (v) => (typeof v === 'number' && Number.isFinite(v) ? undefined : { type: 'float_type', msg: 'Input should be a valid number' });
const strType: Check = (v) => (typeof v === 'string' ? undefined : { type: 'string_type', msg: 'Input should be a valid string' });
const boolType: Check = (v) => (typeof v === 'boolean' ? undefined : { type: 'bool_type', msg: 'Input should be a valid boolean' });

const range =
  (base: Check, min: number, max?: number): Check =>
  (v) =>
    base(v) ??
    ((v as number) < min
      ? { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${min}` }
      : max !== undefined && (v as number) > max
        ? { type: 'less_than_equal', msg: `Input should be less than or equal to ${max}` }
        : undefined);

/** A side: an integer, at least 64, a multiple of 16 (no per-side maximum: BFL resizes above 4 MP). */
const side: Check = (v) => range(intType, 64)(v) ?? ((v as number) % 16 ? { type: 'multiple_of', msg: 'Input should be a multiple of 16' } : undefined);

const image: Check = (v) =>
  strType(v) ??
  (/^https?:\/\/\S+$/i.test(v as string) || /^[A-Za-z0-9+/]+={0,2}$/.test(v as string)
    ? undefined
    : { type: 'value_error', msg: 'Value error, input image must be a URL or a base64 encoded image' });

const format: Check = (v) => (v === 'jpeg' || v === 'png' || v === 'webp' ? undefined : { type: 'enum', msg: "Input should be 'jpeg', 'png' or 'webp'" });

const COMMON: Record<string, Check> = {
  prompt: strType,
  width: side,
  height: side,
  seed: intType,
  safety_tolerance: range(intType, 0, 5),
  output_format: format,
  prompt_upsampling: boolType,
  input_image: image,
  ...Object.fromEntries([2, 3, 4, 5, 6, 7, 8].map((i) => [`input_image_${i}`, image])),
};
const FLEX: Record<string, Check> = { ...COMMON, steps: range(intType, 1, 50), guidance: range(numType, 1.5, 10) };

/** Every problem of a submit body for `model` (empty: valid). `null` is "not given" (BFL's optional fields are nullable). */
export function validateBflBody(model: BflModel, body: unknown): BflValidationError[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from' }];
  }
  const schema = model === 'flux-2-flex' ? FLEX : COMMON;
  const b = body as Record<string, unknown>;
  const errors: BflValidationError[] = [];
  if (b.prompt === undefined) errors.push({ type: 'missing', loc: ['body', 'prompt'], msg: 'Field required' });
  for (const [field, value] of Object.entries(b)) {
    const check = schema[field];
    if (!check) errors.push({ type: 'extra_forbidden', loc: ['body', field], msg: 'Extra inputs are not permitted' });
    else if (value !== null || field === 'prompt') {
      const e = check(value);
      if (e) errors.push({ ...e, loc: ['body', field] });
    }
  }
  return errors;
}
