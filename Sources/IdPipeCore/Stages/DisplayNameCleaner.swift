/// Display names: control and bidirectional-override characters removed, whitespace collapsed and trimmed.
public enum DisplayNameCleaner {
    /// Identity Toolkit rejects longer names.
    public static let maxCharacters = 256

    /// Returns the cleaned name (nil when nothing is left), or a reason it cannot be used.
    public static func clean(_ raw: String, repairs: inout RepairSet) -> Result<String?, RecordIssueReason> {
        if isAlreadyClean(raw) { return checked(raw) }
        var scalars = String.UnicodeScalarView()
        var pendingSpace = false
        var removedControl = false
        var changedSpace = false
        for scalar in raw.unicodeScalars {
            if isControl(scalar) && !TextScan.isSpace(scalar) {
                removedControl = true
                continue
            }
            if TextScan.isSpace(scalar) {
                if scalar != " " || pendingSpace || scalars.isEmpty { changedSpace = true }
                pendingSpace = true
                continue
            }
            if pendingSpace && !scalars.isEmpty { scalars.append(" ") }
            pendingSpace = false
            scalars.append(scalar)
        }
        if pendingSpace { changedSpace = true }
        if removedControl { repairs.insert(.nameControlCharacters) }
        if changedSpace { repairs.insert(.nameWhitespace) }
        return checked(String(scalars))
    }

    /// The last step of both paths: nothing left is no name; a name longer than the API allows is rejected.
    private static func checked(_ name: String) -> Result<String?, RecordIssueReason> {
        if name.isEmpty { return .success(nil) }
        guard name.utf8.count <= maxCharacters || name.count <= maxCharacters else {
            return .failure("is longer than \(maxCharacters) characters")
        }
        return .success(name)
    }

    /// Printable ASCII with single inner spaces: the common case, checked on bytes.
    private static func isAlreadyClean(_ raw: String) -> Bool {
        var previous: UInt8 = 0x20
        for byte in raw.utf8 {
            if byte < 0x20 || byte >= 0x7F { return false }
            if byte == 0x20 && previous == 0x20 { return false }
            previous = byte
        }
        return previous != 0x20 || raw.isEmpty
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: true  // bidi marks and overrides, BOM
        default: false
        }
    }
}
