import { chatCostOf } from './unified-task';

describe('chatCostOf', () => {
  it("is a chat call's priced usage, at most its reservation (what the ledger captured)", () => {
    const chat = (cost: string | undefined, price: bigint) => ({ pool: 'chat', price, result: cost === undefined ? {} : { cost } }) as never;
    expect(chatCostOf(chat('120', 500n))).toBe(120n);
    // an upstream that answered past max_tokens: priced 900, reserved (and captured) 500
    expect(chatCostOf(chat('900', 500n))).toBe(500n);
    expect(chatCostOf(chat(undefined, 500n))).toBeUndefined();
    expect(chatCostOf({ pool: 'image', price: 500n, result: { cost: '120' } } as never)).toBeUndefined();
  });
});
