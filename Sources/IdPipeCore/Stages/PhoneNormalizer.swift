/// Phone numbers to E.164: `+` and 7 to 15 digits, the first not zero.
public enum PhoneNormalizer {
    /// `national`: the country of a number written without a country code (a mapped table's `phone_country_code`);
    /// without it, such a number is refused.
    public static func normalize(_ raw: String, repairs: inout RepairSet, national: PhoneDefault? = nil) -> Result<String, RecordIssueReason> {
        if let trunk = trunkPrefix(in: raw) {
            var repaired = raw
            repaired.removeSubrange(trunk)
            let result = normalize(repaired, repairs: &repairs, national: national)
            if case .success = result { repairs.insert(.phoneReformatted) }
            return result
        }
        var digits: [UInt8] = []
        digits.reserveCapacity(16)
        var sawPlus = false
        var index = 0
        for scalar in raw.unicodeScalars {
            let value = scalar.value
            if value >= 48 && value <= 57 {
                digits.append(UInt8(value))
            } else if value == 43 {  // "+"
                if sawPlus || !digits.isEmpty { return .failure("has a '+' that is not at the start") }
                sawPlus = true
            } else if TextScan.isSpace(scalar) || "-().//".unicodeScalars.contains(scalar) {
                // separators people type; dropped
            } else {
                return .failure("contains '\(scalar)'")
            }
            index += 1
        }
        if !sawPlus {
            // "00" is the international prefix most countries dial instead of "+".
            if digits.count > 2, digits[0] == 48, digits[1] == 48 {
                digits.removeFirst(2)
            } else if let national {
                switch nationalNumber(digits, national) {
                case .success(let international): digits = international
                case .failure(let reason): return .failure(reason)
                }
                guard digits.count <= 15 else { return .failure("is too long for E.164 with its country code (\(digits.count) digits)") }
                // The one repair it names: its rewriting in E.164 goes with it.
                repairs.insert(.phoneCountryCodeAdded)
                return .success("+" + String(decoding: digits, as: UTF8.self))
            } else {
                return .failure("has no country code (E.164 needs a leading '+')")
            }
        }
        guard let first = digits.first, first != 48 else { return .failure("country code cannot start with 0") }
        guard digits.count >= 7 else { return .failure("is too short for E.164 (\(digits.count) digits)") }
        guard digits.count <= 15 else { return .failure("is too long for E.164 (\(digits.count) digits)") }
        let result = "+" + String(decoding: digits, as: UTF8.self)
        if result != raw { repairs.insert(.phoneReformatted) }
        return .success(result)
    }

    /// The digits of a number dialled inside `country`, its trunk prefix dropped, after the country's calling code. Only
    /// lengths are checked (there is no numbering plan here): 10 national digits in North America, at least 7 elsewhere.
    /// A number that starts with the calling code is refused rather than guessed at: written without its '+', it would
    /// get the code twice and become another person's number.
    static func nationalNumber(_ digits: [UInt8], _ country: PhoneDefault) -> Result<[UInt8], RecordIssueReason> {
        var number = digits[...]
        let trunk = Array(country.trunkPrefix.utf8), code = Array(country.countryCode.utf8)
        if !trunk.isEmpty && number.starts(with: trunk) { number = number.dropFirst(trunk.count) }
        let named = "source.phone_country_code: \(country.countryCode)"
        if number.starts(with: code) {
            return .failure("has no '+', and starts with its country code \(country.countryCode) (\(named)): if it is written internationally, add the '+'")
        }
        if country.countryCode == "1" {
            guard number.count == 10 else { return .failure("has no country code, and is not a 10-digit North American number (\(named))") }
        } else {
            guard number.count >= 7 else { return .failure("has no country code, and is too short for a national number with its area code (\(named))") }
        }
        return .success(code + number)
    }

    /// `+44 (0)20 7946 0958`: the trunk prefix a caller inside the country dials, in brackets right after the country
    /// code. It is no digit of the international number; kept, it made `+4402079460958`. Italy's numbers (and San
    /// Marino's and the Vatican's) keep their 0 abroad: `+39 (0)6 6988 1234` is `+390669881234`, and a `(0)` elsewhere
    /// in a number is taken as written. The range of the `(0)` to remove, if any.
    static func trunkPrefix(in raw: String) -> Range<String.Index>? {
        guard raw.contains("(0)") else { return nil }
        var index = raw.startIndex
        func skipSpaces() { while index < raw.endIndex && raw[index].isWhitespace { index = raw.index(after: index) } }
        skipSpaces()
        if raw[index...].hasPrefix("+") {
            index = raw.index(after: index)
        } else if raw[index...].hasPrefix("00") {
            index = raw.index(index, offsetBy: 2)
        } else {
            return nil
        }
        skipSpaces()
        let codeStart = index
        while index < raw.endIndex && raw[index].isASCII && raw[index].isNumber { index = raw.index(after: index) }
        let code = raw[codeStart..<index]
        guard (1...3).contains(code.count), !["39", "378", "379"].contains(code) else { return nil }
        skipSpaces()
        guard raw[index...].hasPrefix("(0)") else { return nil }
        return index..<raw.index(index, offsetBy: 3)
    }

    /// Whether `normalize` would return these bytes as they are, with no repair: `+`, then 7 to 15 ASCII digits, the
    /// first not zero. (The plan's fast path asks on the bytes, and leaves anything else to `normalize`.)
    public static func isAlreadyE164(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 8, bytes.count <= 16, bytes[0] == UInt8(ascii: "+"), bytes[1] != UInt8(ascii: "0") else { return false }
        for index in 1..<bytes.count where bytes[index] < 48 || bytes[index] > 57 { return false }
        return true
    }
}
