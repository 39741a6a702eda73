import IdPipeCSV

/// Newlines in a run of bytes: the export's line numbers, and the side inputs' row counts.
enum Newlines {
    static func count(_ buffer: [UInt8], _ range: Range<Int>) -> Int {
        buffer.withUnsafeBytes { count($0, range) }
    }

    static func count(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int {
        ByteCount.count(0x0A, in: bytes, range)
    }
}
