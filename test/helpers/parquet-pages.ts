// A Parquet file's bytes with every compressed page replaced by its decompressed body: what a byte search must
// look at to say that a text is not in the file (a Snappy page can hide it). Page headers, statistics and the
// footer stay as they are. Snappy and uncompressed pages only (what our exports write).
import { parquetMetadata, snappyUncompress } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';

export function decompressedImage(file: Buffer): Buffer {
  const ab = file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer;
  const meta = parquetMetadata(ab);
  const view = new DataView(ab);
  const parts: Buffer[] = [];
  let copied = 0;
  for (const rg of meta.row_groups) {
    for (const c of rg.columns) {
      const m = c.meta_data!;
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset);
      const end = start + Number(m.total_compressed_size);
      const reader = { view, offset: start };
      while (reader.offset < end) {
        const header = parquetHeader(reader);
        const v2 = header.data_page_header_v2;
        // A v2 page keeps its levels uncompressed before the compressed values.
        const levels = v2 ? v2.definition_levels_byte_length + v2.repetition_levels_byte_length : 0;
        const body = reader.offset + levels;
        const bodyEnd = reader.offset + header.compressed_page_size;
        const compressed = m.codec === 'SNAPPY' && (!v2 || v2.is_compressed);
        parts.push(file.subarray(copied, body));
        if (compressed) {
          const out = new Uint8Array(header.uncompressed_page_size - levels);
          snappyUncompress(new Uint8Array(ab, body, bodyEnd - body), out);
          parts.push(Buffer.from(out));
        } else {
          parts.push(file.subarray(body, bodyEnd));
        }
        copied = bodyEnd;
        reader.offset = bodyEnd;
      }
    }
  }
  parts.push(file.subarray(copied));
  return Buffer.concat(parts);
}
