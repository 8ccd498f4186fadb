import { bradleyTerryTable } from '../tasks/bradley-terry.ts';
const players = Array.from({length: 8}, (_, i) => `p${i}`);
let s = 1; const r = () => (s = (s * 16807) % 2147483647) / 2147483647;
const j = Array.from({length: 20000}, () => { const a = Math.floor(r()*8); let b = Math.floor(r()*7); if (b>=a) b++; return { a: players[a], b: players[b], outcome: r() < 0.5 + (a-b)/20 ? 1 : 0 } as any; });
const t = performance.now(); bradleyTerryTable(players, j, { resamples: 500, seed: 11 }); console.log('ms', performance.now() - t);
console.log("its", (globalThis as any).__its, "cap", (globalThis as any).__cap);
