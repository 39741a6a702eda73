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
                // A table of a country whose international prefix is not 00 (0011 in Australia): its "0011 44…" read as
                // 00 made +1144…, a North American number whose area code starts with 1, which none does.
                if national != nil, digits.first == 49, digits.count != 11 || digits[1] <= 49 {
                    return .failure(RecordIssueReason("starts with 00 and then 1, but is no North American number (10 digits, an area code from 2 "
                        + "to 9): is 00 the table's international prefix? \(atTheSource)"))
                }
            } else if let national {
                switch nationalNumber(digits, national) {
                case .success(let international): digits = international
                case .failure(let reason): return .failure(reason)
                }
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

    /// What a number that cannot be completed safely needs.
    static let atTheSource = "write it in E.164 at the source (+, country code, number)"

    /// The digits of a number dialled inside `country`, after the country's calling code. Only lengths and first digits
    /// are checked (there is no numbering plan here), and anything else is refused rather than guessed at, as a wrong
    /// guess is another person's number:
    /// - North America (1): 10 digits, the area code's first from 2 to 9; 11 with the trunk prefix 1 before them.
    /// - A country with the trunk prefix 0: the number must start with it (without it, `33 6…` could be a French number
    ///   written without its '+'), and after it have 7 to 11 digits.
    /// - A country with none (Italy, Spain): 7 to 11 digits, taken whole.
    /// A number that then starts with the country's own code is refused: it could be the code written without its '+',
    /// or a national number that starts with the same digits (an Italian 393 mobile). What it gives stays within
    /// E.164's 15 digits: 3 of a code and 11 at most, or 1 and 10.
    static func nationalNumber(_ digits: [UInt8], _ country: PhoneDefault) -> Result<[UInt8], RecordIssueReason> {
        let named = "source.phone_country_code: \(country.countryCode)"
        let trunk = Array(country.trunkPrefix.utf8), code = Array(country.countryCode.utf8)
        var number = digits[...]
        if country.countryCode == "1" {
            if !trunk.isEmpty && number.count == 11 && number.starts(with: trunk) { number = number.dropFirst(trunk.count) }
            guard number.count == 10, let first = number.first, first >= 50 else {
                return .failure(RecordIssueReason("has no country code, and is not a North American number of 10 digits with an area code from 2 to 9 "
                    + "(\(named)); \(atTheSource)"))
            }
            return .success(code + number)
        }
        if !trunk.isEmpty {
            guard number.starts(with: trunk) else {
                return .failure(RecordIssueReason("has neither a country code nor the trunk prefix \(country.trunkPrefix) of a number dialled in the "
                    + "country (\(named)); \(atTheSource)"))
            }
            // (A second 0 after it made 00, the international prefix, read before.)
            number = number.dropFirst(trunk.count)
        }
        if number.starts(with: code) {
            return .failure(RecordIssueReason("has no '+', and starts with the digits of its country code \(country.countryCode) (\(named)): it "
                + "cannot be told whether they are the code; \(atTheSource)"))
        }
        guard (7...11).contains(number.count) else {
            return .failure("has no country code, and its \(number.count) digits are not a national number's 7 to 11 (\(named)); \(atTheSource)")
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
