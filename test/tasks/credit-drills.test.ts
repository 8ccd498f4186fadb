import { describe, expect, it } from 'vitest';
import { creditDrills, creditMatchingDrills } from '../../tasks/credit-drills.ts';
import { CREDIT_V2_KEYS } from '../../tasks/credit.ts';
import { ANSWER_MARKER, agentSystemPrompt } from '../../tasks/protocol.ts';

describe('credit drills', () => {
  it("are deterministic dialogues after the games' system prompt whose answer copies each named key and its told value", () => {
    const drills = creditDrills(3, 200);
    expect(drills).toHaveLength(200);
    expect(creditDrills(3, 200)).toEqual(drills);
    expect(creditDrills(4, 200)).not.toEqual(drills);
    let lookups = 0;
    let lists = 0;
    for (const [system, user, assistant] of drills) {
      expect(system).toEqual({ role: 'system', content: agentSystemPrompt('backend') });
      expect(user!.role).toBe('user');
      expect(assistant!.role).toBe('assistant');
      // No move of the game is taught: no question, no answer marker.
      expect(assistant!.content).not.toContain('?');
      expect(assistant!.content).not.toContain(ANSWER_MARKER);
      const told = new Map([...user!.content.matchAll(/The ([a-z]+) is (\d+)\./g)].map((m) => [m[1]!, Number(m[2])]));
      const named = /(?:keys) ([a-z, ]+?)(?:\.| and ([a-z]+)\.)/.exec(user!.content)!;
      const keys = [...named[1]!.split(', '), ...(named[2] ? [named[2]] : [])];
      if (told.size > 0) {
        lookups++;
        // The dict names the keys in the order asked, each with the value told for it (not its position's).
        expect(assistant!.content).toBe(`{${keys.map((k) => `"${k}": ${told.get(k)}`).join(', ')}}`);
        expect(keys.every((k) => told.has(k))).toBe(true);
      } else {
        lists++;
        expect(assistant!.content).toBe(keys.join(', '));
      }
    }
    expect(lookups).toBeGreaterThan(100);
    expect(lists).toBeGreaterThan(20);
    // The order asked differs from the order told in some drills, so position alone does not give the value.
    expect(
      drills.some(([, u, a]) => {
        const toldOrder = [...u!.content.matchAll(/The ([a-z]+) is/g)].map((m) => m[1]);
        const asked = [...a!.content.matchAll(/"([a-z]+)"/g)].map((m) => m[1]);
        return asked.length > 1 && toldOrder.indexOf(asked[0]) > toldOrder.indexOf(asked[1]);
      }),
    ).toBe(true);
  });
});

describe('credit matching drills', () => {
  it("are the optimum's games (each key asked once, then the answer) with the keys in every order, deterministic in the seed", () => {
    const drills = creditMatchingDrills(5, 120);
    expect(drills).toHaveLength(120);
    expect(creditMatchingDrills(5, 120)).toEqual(drills);
    const orders = new Set<string>();
    for (const d of drills) {
      expect(d[0]).toEqual({ role: 'system', content: agentSystemPrompt('backend') });
      const turns = d.slice(2).map((m) => ({ role: m.role === 'assistant' ? 'agent' : 'human', content: m.content }));
      expect(turns).toHaveLength(7);
      expect(turns[6]!.content).toContain(ANSWER_MARKER);
      const asked = turns
        .filter((_, i) => i % 2 === 0 && i < 6)
        .map((t) => /What is the ([a-z]+)\?/.exec(t.content)![1]!);
      expect([...asked].sort()).toEqual([...CREDIT_V2_KEYS].sort());
      orders.add(asked.join(','));
      // Each reply gives the value asked for: every question is useful.
      turns
        .filter((_, i) => i % 2 === 1)
        .forEach((t, i) => expect(t.content).toMatch(new RegExp(`^The ${asked[i]} is \\d\\.$`)));
    }
    // Key order carries no information: all 3! orders occur.
    expect(orders.size).toBe(6);
  });
});
