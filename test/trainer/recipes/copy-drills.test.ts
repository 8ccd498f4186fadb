import { describe, expect, it } from 'vitest';
import { copyDrills } from '../../../trainer/recipes/copy-drills.ts';
import { agentSystemPrompt } from '../../../tasks/protocol.ts';

describe('copy drills', () => {
  it("are deterministic dialogues whose answer is exactly the items the person gave, after the games' system prompt", () => {
    const drills = copyDrills(3, 50);
    expect(drills).toHaveLength(50);
    expect(copyDrills(3, 50)).toEqual(drills);
    expect(copyDrills(4, 50)).not.toEqual(drills);
    for (const [system, user, assistant] of drills) {
      expect(system).toEqual({ role: 'system', content: agentSystemPrompt('backend') });
      expect(user!.role).toBe('user');
      expect(assistant!.role).toBe('assistant');
      // The opener ends with a colon; everything after it is what the assistant writes back.
      expect(user!.content.slice(user!.content.indexOf(':') + 2)).toBe(assistant!.content);
      const items = assistant!.content.split(' ');
      expect(items.length).toBeGreaterThanOrEqual(6);
    }
    // Every kind of item appears: identifiers, numbers, booleans, quoted strings.
    const all = drills.map((d) => d[2]!.content).join(' ');
    expect(all).toMatch(/\b[a-z]+_[a-z_]+\b/);
    expect(all).toMatch(/\b\d+\.\d+\b/);
    expect(all).toMatch(/\b(True|False)\b/);
    expect(all).toMatch(/'[^']+'/);
  });
});
