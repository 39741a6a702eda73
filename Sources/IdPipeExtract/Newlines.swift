/// Newlines in a run of bytes: the export's line numbers, and the side inputs' row counts.
enum Newlines {
    static func count(_ buffer: [UInt8], _ range: Range<Int>) -> Int {
        buffer.withUnsafeBytes { count($0, range) }
    }

    /// Counted eight bytes at a time: this runs over every byte of the export on the reading thread (and over each
    /// side input before it is read, to size its table).
    static func count(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int {
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        var count = 0
        var index = range.lowerBound
        // Each byte of `lanes` counts the newlines at its position, for up to 255 words; then the lanes are
        // summed. (A population count per word was a dozen instructions: the build targets CPUs without one.)
        var lanes: UInt64 = 0
        var words = 0
        func sumLanes() -> Int {
            let pairs = (lanes & 0x00FF_00FF_00FF_00FF) &+ ((lanes >> 8) & 0x00FF_00FF_00FF_00FF)
            return Int((pairs &* 0x0001_0001_0001_0001) >> 48)
        }
        while index + 8 <= range.upperBound {
            // A byte of `x` is zero where the input has a newline; `zero` gets exactly those bytes' high bits
            // (no carry crosses a byte: (b & 0x7F) + 0x7F < 0x100).
            let x = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ newlines
            let zero = ~(((x & low7) &+ low7) | x | low7)
            lanes &+= zero >> 7
            words += 1
            if words == 255 {
                count += sumLanes()
                lanes = 0
                words = 0
            }
            index += 8
        }
        count += sumLanes()
        while index < range.upperBound {
            if bytes[index] == 0x0A { count += 1 }
            index += 1
        }
        return count
    }
}
