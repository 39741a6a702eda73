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
        guard let at = value.lastIndex(of: "@") else { return "•••" }
        return String(value.prefix(1)) + "•••" + value[at...]
    }

    /// `Jane Doe` → `J••• D•••`; `山田太郎` → `山•••`.
    public func name(_ value: String?) -> String {
        guard let value else { return "" }
        if reveal { return value }
        return value.split(separator: " ").map { String($0.prefix(1)) + "•••" }.joined(separator: " ")
    }

    /// `+14155550100` → `+1•••••••00`.
    public func phone(_ value: String?) -> String {
        guard let value else { return "" }
        if reveal || value.count < 5 { return reveal ? value : "•••" }
        return String(value.prefix(2)) + String(repeating: "•", count: value.count - 4) + String(value.suffix(2))
    }
}
