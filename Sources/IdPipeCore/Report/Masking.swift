/// Masks personal data in reports unless the reviewer asked to see it.
public struct Masking: Sendable {
    public let reveal: Bool

    public init(reveal: Bool) {
        self.reveal = reveal
    }

    /// `jane.doe@example.com` → `j•••@example.com`. The domain stays: it tells relay from real addresses.
    public func email(_ value: String?) -> String {
        guard let value else { return "" }
        if reveal { return value }
        if let fast = Self.plainASCII(value, { bytes in
            guard let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return Self.dots }
            return [bytes[0]] + Self.dots + bytes[at...]
        }) { return fast }
        guard let at = value.lastIndex(of: "@") else { return "•••" }
        return String(value.prefix(1)) + "•••" + value[at...]
    }

    /// `Jane Doe` → `J••• D•••`; `山田太郎` → `山•••`.
    public func name(_ value: String?) -> String {
        guard let value else { return "" }
        if reveal { return value }
        if let fast = Self.plainASCII(value, { bytes in
            var out: [UInt8] = []
            for word in bytes.split(separator: UInt8(ascii: " ")) {
                if !out.isEmpty { out.append(UInt8(ascii: " ")) }
                out.append(word.first!)
                out += Self.dots
            }
            return out
        }) { return fast }
        return value.split(separator: " ").map { String($0.prefix(1)) + "•••" }.joined(separator: " ")
    }

    /// `+14155550100` → `+1•••••••00`.
    public func phone(_ value: String?) -> String {
        guard let value else { return "" }
        if reveal || value.count < 5 { return reveal ? value : "•••" }
        return String(value.prefix(2)) + String(repeating: "•", count: value.count - 4) + String(value.suffix(2))
    }

    private static let dots = Array("•••".utf8)

    /// Reports mask hundreds of thousands of values: for printable ASCII (no CR, so every byte is a Character) the
    /// mask is built on bytes, with the same result as the Character-based rules above, which handle the rest.
    static func plainASCII(_ value: String, _ mask: (UnsafeBufferPointer<UInt8>) -> [UInt8]) -> String? {
        value.utf8.withContiguousStorageIfAvailable { bytes -> String? in
            guard !bytes.isEmpty, !bytes.contains(where: { $0 >= 0x80 || $0 == 0x0D }) else { return nil }
            return String(decoding: mask(bytes), as: UTF8.self)
        } ?? nil
    }
}
