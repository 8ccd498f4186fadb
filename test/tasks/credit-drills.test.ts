import { describe, expect, it } from 'vitest';
import { creditDrills } from '../../tasks/credit-drills.ts';
import { ANSWER_MARKER, agentSystemPrompt } from '../../tasks/protocol.ts';

describe('credit drills', () => {
  it('are deterministic dialogues after the games\' system prompt whose answer copies each named key and its told value', () => {
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
    expect(drills.some(([, u, a]) => {
      const toldOrder = [...u!.content.matchAll(/The ([a-z]+) is/g)].map((m) => m[1]);
      const asked = [...a!.content.matchAll(/"([a-z]+)"/g)].map((m) => m[1]);
      return asked.length > 1 && toldOrder.indexOf(asked[0]) > toldOrder.indexOf(asked[1]);
    })).toBe(true);
  });
});
