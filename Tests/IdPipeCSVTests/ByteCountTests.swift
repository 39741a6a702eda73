import Testing
@testable import IdPipeCSV

/// Counting a byte sixteen at a time gives what a byte-by-byte count gives: any start and end (within a step, across
/// the lanes' flush every 255 steps), runs of nothing but the byte (more than a lane can hold without the flush).
@Suite struct ByteCountTests {
    @Test func countsAsAByteByByteLoopDoes() {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<20_000).map { _ in UInt8.random(in: 0...15, using: &generator) == 0 ? 0x0A : UInt8.random(in: 0...255, using: &generator) }
        bytes.replaceSubrange(5_000..<9_500, with: repeatElement(0x0A, count: 4_500))
        bytes.withUnsafeBytes { raw in
            for range in [0..<0, 0..<15, 0..<16, 3..<19, 1..<4_081, 0..<4_096, 7..<9_000, 4_999..<9_501, 0..<20_000, 13..<19_987] {
                let expected = bytes[range].filter { $0 == 0x0A }.count
                #expect(ByteCount.count(0x0A, in: raw, range) == expected, "\(range)")
            }
            for _ in 0..<200 {
                let start = Int.random(in: 0..<20_000, using: &generator)
                let range = start..<Int.random(in: start...20_000, using: &generator)
                #expect(ByteCount.count(0x0A, in: raw, range) == bytes[range].filter { $0 == 0x0A }.count, "\(range)")
            }
        }
    }
}
