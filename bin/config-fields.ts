// The zod field types bin/config.ts builds its schema from (booleans, lists, Discord ids, bounded numbers).
import { z } from 'zod';

export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
export const csv = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
export const snowflake = z.string().regex(/^\d{17,20}$/, 'expected a Discord snowflake (17-20 digits)');
/** Guild ids, or `*` for any guild: said explicitly, since an open bot lets any server's moderators in. */
export const guildAllowlist = z.string().transform((v, ctx): '*' | string[] => {
  if (v.trim() === '*') return '*';
  const ids = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!ids.every((id) => /^\d{17,20}$/.test(id)))
    ctx.addIssue({
      code: 'custom',
      message: 'expected Discord snowflakes (17-20 digits) separated by commas, or * for any guild',
    });
  return ids;
});
export const positiveInt = z.coerce
  .number({ message: 'expected a number' })
  .int('expected an integer')
  .positive('expected a positive integer');
export const unit = z.coerce
  .number({ message: 'expected a number' })
  .min(0, 'expected a number in [0, 1]')
  .max(1, 'expected a number in [0, 1]');
